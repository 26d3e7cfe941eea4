"""A misspelled processor option is a `ConfigurationError` that names it and the closest valid
one, for every `Processor` subclass alike (the built-ins and yours).

Python would report `stratgy=` as a bare `TypeError` about `__init__` of an internal class;
`Processor.__new__` checks the keyword arguments against the class's `__init__` first. Only
construction pays for it: the parameter names are read once per class.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterable
from weakref import WeakKeyDictionary

from sluicegate.errors import ConfigurationError, UnknownOptionError

_known: WeakKeyDictionary[type, frozenset[str] | None] = WeakKeyDictionary()


def class_name(cls: type) -> str:
    """The name to show for `cls`: its shortest public alias in its own module, so a message
    says `RegexFilter`, as the user wrote it, rather than `RegexFilterProcessor`."""
    module = sys.modules.get(cls.__module__)
    if module is None:
        return cls.__name__
    aliases = [name for name, value in vars(module).items() if value is cls and not name.startswith("_")]
    return min(aliases, key=len, default=cls.__name__)


def known_options(cls: type) -> frozenset[str] | None:
    """The keyword arguments `cls(...)` accepts; None when its `__init__` takes `**kwargs`
    (anything goes, so nothing can be called unknown)."""
    try:
        return _known[cls]
    except KeyError:
        pass
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]  # type: ignore[misc]
    except (TypeError, ValueError):  # a builtin __init__ without a signature
        names = None
    else:
        keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            names = None
        else:
            names = frozenset(p.name for p in parameters if p.kind in keyword)
    _known[cls] = names
    return names


def check_options(cls: type, given: Iterable[str]) -> None:
    """Raise `UnknownOptionError` for the first keyword `cls(...)` does not take."""
    known = known_options(cls)
    if known is None:
        return
    unknown = [name for name in given if name not in known]
    if unknown:
        raise unknown_options(class_name(cls), unknown, known)


def unknown_options(label: str, unknown: Iterable[str], known: Iterable[str]) -> UnknownOptionError:
    """The error for `unknown` keywords of `label`, each with its closest `known` spelling."""
    import difflib  # only a mistake needs suggestions

    choices = sorted(known)
    hints = []
    names = list(unknown)
    for name in names:
        close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    kind = "unknown option" if len(names) == 1 else "unknown options"
    return UnknownOptionError(
        f"{label}: {kind} {', '.join(hints)}; its options are: {', '.join(choices) or 'none'}"
    )


def checked_id(owner: str, value: object) -> str:
    """A processor's `id=` option: a non-empty string, or a `ConfigurationError` naming `owner`."""
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"{owner}: id must be a non-empty string, got {value!r}")
    return value
