"""Package attributes imported on first access (PEP 562), so optional dependencies load only
when the feature that needs them is used."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_attributes(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports `names[attr]` (a submodule) on demand.

    A missing optional dependency surfaces as the submodule's `MissingExtraError`.
    """
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
