"""The llama.cpp runtime behind the embedded model: one in-process llama.cpp server per GGUF.

`xllamacpp` (the `local` extra) ships llama.cpp prebuilt as a manylinux/macOS/Windows wheel, so
installing the local model compiles nothing. It wraps llama.cpp's own C++ server: requests are
OpenAI-style chat-completion (or raw completion) dicts handled in-process, with the GGUF's chat
template, llama.cpp's stop handling, streaming through a callback, usage counts and grammars
(GBNF, or JSON schemas through LLGuidance). Generation releases the GIL, so a worker thread can
run it while the event loop keeps going.

That server also always listens on a loopback port. Nothing here uses it for generation, and it
is locked: a random API key is set per process (every endpoint but `/health` and `/models` then
answers 401 without it), the slots, metrics and props-editing endpoints and the web UI are off.
The key is used only to read the model's chat template from `/props` once.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluicegate.errors import MissingExtraError


def missing_runtime() -> MissingExtraError:
    return MissingExtraError("xllamacpp", extra="local", feature="the local model")


@dataclass
class LlamaRuntime:
    """A loaded GGUF: its llama.cpp server, the chat template it renders prompts with, and the
    lock that serialises generations (one at a time, so concurrent calls never share a context
    mid-answer and each prompt is evaluated the same way it would be alone)."""

    server: Any
    chat_template: str
    lock: threading.Lock = field(default_factory=threading.Lock)

    def chat(self, request: dict[str, Any], on_chunk: Any = None) -> Any:
        """`POST /v1/chat/completions`, in-process: the answer, or None when streamed to `on_chunk`."""
        if on_chunk is None:
            return self.server.handle_chat_completions(request)
        return self.server.handle_chat_completions(request, on_chunk)

    def complete(self, request: dict[str, Any], on_chunk: Any = None) -> Any:
        """`POST /v1/completions` on a raw prompt, in-process."""
        if on_chunk is None:
            return self.server.handle_completions(request)
        return self.server.handle_completions(request, on_chunk)


_LOAD_LOCK = threading.Lock()
_RUNTIMES: dict[tuple[str, int], LlamaRuntime] = {}


def loaded(path: Path, n_ctx: int) -> LlamaRuntime | None:
    """The runtime for `path` if it is already loaded (no blocking work)."""
    return _RUNTIMES.get((str(path), n_ctx))


def load_runtime(path: Path, n_ctx: int, n_threads: int | None = None) -> LlamaRuntime:
    """The process-wide runtime for `path` (loaded on first use; blocks for a second or two)."""
    key = (str(path), n_ctx)
    runtime = _RUNTIMES.get(key)
    if runtime is not None:
        return runtime
    with _LOAD_LOCK:
        runtime = _RUNTIMES.get(key)
        if runtime is None:
            # llama.cpp's OpenMP workers spin while they wait by default; on a shared or busy
            # machine that turns 2 threads into seconds per token. Passive waiting keeps them
            # off the CPU between operations (an application's own setting wins).
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                import xllamacpp
            except ImportError as exc:
                raise missing_runtime() from exc
            api_key = secrets.token_urlsafe(32)
            server = xllamacpp.Server(_params(xllamacpp, path, n_ctx, n_threads, api_key))
            runtime = LlamaRuntime(server=server, chat_template=_chat_template(server, api_key))
            if not _RUNTIMES:
                atexit.register(close_runtimes)
            _RUNTIMES[key] = runtime
    return runtime


def _params(xllamacpp: Any, path: Path, n_ctx: int, n_threads: int | None, api_key: str) -> Any:
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    threads = n_threads or os.cpu_count() or 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.verbosity = 0  # llama.cpp's own log lines stay off the application's stderr
    params.warmup = False
    params.offline = True  # never reach a model hub
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.api_keys = [api_key]
    params.endpoint_slots = False
    params.endpoint_metrics = False
    params.endpoint_props = False
    params.ui = False
    params.n_threads_http = 1
    return params


def _chat_template(server: Any, api_key: str) -> str:
    """The chat template llama.cpp renders prompts with (the GGUF's own), read from `/props`."""
    request = urllib.request.Request(
        f"{server.listening_address}/props", headers={"Authorization": f"Bearer {api_key}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        props = json.load(response)
    return str(props.get("chat_template") or "")


def close_runtimes() -> None:
    """Stop the servers before interpreter shutdown (their threads would outlive the modules)."""
    _RUNTIMES.clear()
