"""Which files a `local/...` model string may load.

A model string can come from a request (the per-call `model=` option), so it must not reach
arbitrary files: `local/<name>` is either a known model (`smollm2-135m`) or the file name of a
GGUF inside the models directory, which the application configures (`set_models_dir(...)` or
the `SLUICEGATE_MODELS_DIR` environment variable). Absolute paths, `..`, `~`, hidden files and
symlinks leading out of the directory are refused, and errors never repeat the caller's string.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sluicegate.errors import ConfigurationError

MODELS_DIR_ENV = "SLUICEGATE_MODELS_DIR"
_configured: Path | None = None
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}\.gguf$")
"""A GGUF file name: letters, digits, `.`, `_`, `-`; no separators, no leading dot."""


def set_models_dir(path: str | os.PathLike[str] | None) -> None:
    """Where `local/<file>.gguf` models are looked up (None: back to `SLUICEGATE_MODELS_DIR`)."""
    global _configured
    _configured = Path(path).expanduser().resolve() if path is not None else None


def models_dir() -> Path | None:
    """The configured models directory, or None when local GGUF files are not enabled."""
    if _configured is not None:
        return _configured
    env = os.environ.get(MODELS_DIR_ENV)
    return Path(env).expanduser().resolve() if env else None


def resolve_gguf(file_name: str, directory: Path | None = None) -> Path:
    """The GGUF `file_name` inside the models directory; `ConfigurationError` otherwise."""
    base = directory.expanduser().resolve() if directory is not None else models_dir()
    if not _SAFE_NAME.match(file_name):
        raise ConfigurationError(
            "a local model must be a known name or the file name of a .gguf in the models directory "
            "(letters, digits, '.', '_', '-'; no paths)"
        )
    if base is None:
        raise ConfigurationError(
            f"local .gguf models are disabled: set the models directory with "
            f"sluicegate.models.local_paths.set_models_dir(...) or {MODELS_DIR_ENV}"
        )
    path = (base / file_name).resolve()
    if path.parent != base or not path.is_file():
        raise ConfigurationError("no such .gguf file in the models directory")
    return path
