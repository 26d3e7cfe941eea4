"""Model strings: `"provider/model"` -> a `LanguageModel`.

Providers register a factory under their name; `resolve_model` looks the name up and calls it
with the model id. The built-in providers register themselves when `sluicegate.models` is
imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluicegate.errors import UnknownModelError
from sluicegate.models.base import LanguageModel

ModelFactory = Callable[[str], LanguageModel]

_FACTORIES: dict[str, ModelFactory] = {}


def register_provider(name: str, factory: ModelFactory) -> None:
    """Make `"<name>/<model id>"` strings resolve through `factory(model_id)`."""
    _FACTORIES[name] = factory


def known_providers() -> list[str]:
    return sorted(_FACTORIES)


def resolve_model(model: str | LanguageModel | Any) -> LanguageModel:
    """A `LanguageModel` for a model string or object (objects are returned as they are)."""
    if not isinstance(model, str):
        if not hasattr(model, "do_stream"):
            raise UnknownModelError(
                f"a model must be a 'provider/model' string or a LanguageModel, got {model!r}"
            )
        return model
    provider, sep, model_id = model.partition("/")
    if not sep or not model_id:
        raise UnknownModelError(f"model string {model!r} must look like 'provider/model-id'")
    factory = _FACTORIES.get(provider)
    if factory is None:
        known = ", ".join(known_providers()) or "none registered"
        import difflib  # only on this error: `import sluicegate` stays lean

        close = difflib.get_close_matches(provider.lower(), known_providers(), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UnknownModelError(
            f"unknown model provider {provider!r} in {model!r}; {hint}known providers: {known}"
        )
    return factory(model_id)
