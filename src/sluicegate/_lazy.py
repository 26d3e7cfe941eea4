"""Package attributes imported on first access (PEP 562), so optional dependencies load only
when the feature that needs them is used."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_attributes(
    package: str, names: dict[str, str], *, source: str | None = None
) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports `names[attr]` (a submodule of `source`,
    by default of `package` itself) on demand.

    A missing optional dependency surfaces as the submodule's `MissingExtraError`. `source`
    re-exports a name from a higher layer without importing that layer at import time.
    """
    namespace = importlib.import_module(package).__dict__
    source = source or package

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{source}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
