"""Loading an application file (`app.py` or `app.py:name`) into a `Sluicegate` registry.

A file that defines a `Sluicegate` object is served as it is; otherwise every module-level
`Agent` is served, keyed by its id. Worker processes started by uvicorn import
`app_from_env`, which reads the same file from `SLUICEGATE_APP`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from sluicegate.agent import Agent
from sluicegate.errors import ConfigurationError
from sluicegate.registry import Sluicegate

APP_ENV = "SLUICEGATE_APP"


def split_target(target: str) -> tuple[Path, str | None]:
    """`"app.py:name"` → (path, "name"); `"app.py"` → (path, None)."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or "/" in name or name.endswith(".py"):
        return Path(target), None
    return Path(path), name or None


def load_module(path: Path) -> ModuleType:
    path = path.resolve()
    if not path.is_file():
        raise ConfigurationError(f"no such application file: {path}")
    directory = str(path.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = f"sluicegate_app_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def registry_from_module(module: ModuleType, name: str | None = None) -> Sluicegate:
    if name is not None:
        value: Any = getattr(module, name, None)
        if isinstance(value, Sluicegate):
            return value
        if isinstance(value, Agent):
            return Sluicegate(agents={value.id: value})
        raise ConfigurationError(f"{module.__file__}: {name!r} is not a Sluicegate registry or an Agent")
    registries = [v for v in vars(module).values() if isinstance(v, Sluicegate)]
    if len(registries) > 1:
        raise ConfigurationError(
            f"{module.__file__} defines {len(registries)} Sluicegate objects; name one as app.py:name"
        )
    if registries:
        return registries[0]
    agents = [v for k, v in vars(module).items() if isinstance(v, Agent) and not k.startswith("_")]
    if not agents:
        raise ConfigurationError(f"{module.__file__} defines no Sluicegate registry and no Agent")
    unique: dict[int, Agent] = {id(a): a for a in agents}
    return Sluicegate(agents=list(unique.values()))


def load_registry(target: str) -> Sluicegate:
    path, name = split_target(target)
    return registry_from_module(load_module(path), name)


def app_from_env() -> Any:
    """The ASGI app for `SLUICEGATE_APP` (a factory for uvicorn workers and reload)."""
    from sluicegate.server.app import create_app
    from sluicegate.server.settings import ServerSettings

    target = os.environ.get(APP_ENV)
    if not target:
        raise ConfigurationError(f"{APP_ENV} is not set")
    return create_app(load_registry(target), ServerSettings.from_env())
