"""What every request body must be before any route reads it: text that is valid Unicode and
numbers that JSON has.

Python's JSON decoder accepts `"\\ud800"` (a lone surrogate) and `NaN` / `Infinity`; neither
survives the trip to a database, a provider or back out as a JSON response, so a body that
holds one anywhere (a value or a key, however deep) is refused here with a 400 naming the field,
instead of failing later as a 500.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic_core import PydanticCustomError

ERROR_TYPE = "plain_json"
"""The validation error type; its context carries the exact `field` path."""


def _is_text(value: str) -> bool:
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(key: str) -> str:
    """A key as it can be printed in the error (its surrogates escaped)."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def _name(path: tuple[str, ...]) -> str:
    return ".".join(path) or "body"


def find_problem(data: Any) -> tuple[str, str] | None:
    """The first field (dotted path) holding a lone surrogate or a non-finite number, and why."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if not _is_text(value):
                return _name(path), "not valid Unicode text (a lone surrogate)"
        elif isinstance(value, float):
            if not math.isfinite(value):
                return _name(path), f"{value} is not a JSON number"
        elif isinstance(value, dict):
            for key, item in reversed(value.items()):
                name = str(key)
                if not _is_text(name):
                    return _name((*path, _shown(name))), "the key is not valid Unicode (a lone surrogate)"
                stack.append((item, (*path, name)))
        elif isinstance(value, list):
            stack.extend((item, (*path, str(i))) for i, item in reversed(list(enumerate(value))))
    return None


def check_plain_json(data: Any) -> Any:
    """`data` unchanged, or a validation error naming the first field that is not plain JSON."""
    problem = find_problem(data)
    if problem is not None:
        field, message = problem
        raise PydanticCustomError(ERROR_TYPE, "{field}: {message}", {"field": field, "message": message})
    return data
