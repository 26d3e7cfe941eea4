"""Loading an application file (`app.py` or `app.py:name`) into a `Sluicegate` registry.

A file that defines a `Sluicegate` object is served as it is; otherwise every module-level
`Agent` is served, keyed by its id. Worker processes started by uvicorn import
`app_from_env`, which reads the same file from `SLUICEGATE_APP`.

Anything the file raises while it loads becomes an `AppLoadError` naming the file, the line and
the message, so the CLI can print one line for it. Under `sluicegate dev` (`SLUICEGATE_DEV`)
a file that fails to load is served as an error page on every route (see `dev_error`) until
the reloader sees it fixed.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from sluicegate.agent import Agent
from sluicegate.errors import ConfigurationError, SluicegateError
from sluicegate.registry import Sluicegate

APP_ENV = "SLUICEGATE_APP"
DEV_ENV = "SLUICEGATE_DEV"

log = logging.getLogger("sluicegate.server")


class AppLoadError(ConfigurationError):
    """The application file raised while it was loaded: `file`, `line` and `detail` say where
    and what (the line in the user's own code nearest the error)."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        super().__init__(f"{file}{f':{line}' if line else ''}: {message}")
        self.file = file
        self.line = line
        self.detail = message

    @classmethod
    def of(cls, exc: BaseException, path: Path) -> AppLoadError:
        """Where `exc` (raised while `path` loaded) happened: a syntax error's own position,
        else the deepest traceback frame in the application's directory."""
        message = str(exc) if isinstance(exc, SluicegateError) else f"{type(exc).__name__}: {exc}"
        if isinstance(exc, SyntaxError) and exc.filename:
            return cls(exc.filename, exc.lineno, f"{type(exc).__name__}: {exc.msg}")
        file, line = str(path), None
        directory = path.parent
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            frame_file = Path(frame.f_code.co_filename)
            if frame_file.parent == directory or frame_file == path:
                file, line = str(frame_file), lineno
        return cls(file, line, message)


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
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise AppLoadError.of(exc, path) from exc
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
    """The registry `target` names, its agents' models checked (see `model_check`): a model
    that cannot be used fails here, naming the file and line, not at the first request."""
    from sluicegate.server.model_check import check_app_models

    path, name = split_target(target)
    module = load_module(path)
    registry = registry_from_module(module, name)
    names = {id(value): key for key, value in vars(module).items() if isinstance(value, Agent)}
    found = check_app_models(registry, Path(module.__file__ or path), names)
    if found is not None:
        line, message = found
        raise AppLoadError(str(module.__file__ or path), line, message)
    return registry


def app_from_env() -> Any:
    """The ASGI app for `SLUICEGATE_APP` (a factory for uvicorn workers and reload)."""
    from sluicegate.server.app import create_app
    from sluicegate.server.settings import ServerSettings

    target = os.environ.get(APP_ENV)
    if not target:
        raise ConfigurationError(f"{APP_ENV} is not set")
    if os.environ.get(DEV_ENV):
        try:
            registry = load_registry(target)
        except SluicegateError as exc:
            from sluicegate.server.dev_error import error_app
            from sluicegate.server.hosts import HostCheck

            log.error("sluicegate dev: %s (serving an error page until the file is fixed)", exc)
            hosts = ServerSettings.from_env().allowed_hosts  # the page shows the app's source lines
            return HostCheck(error_app(exc), hosts) if hosts else error_app(exc)
        return create_app(registry, ServerSettings.from_env())
    return create_app(load_registry(target), ServerSettings.from_env())
