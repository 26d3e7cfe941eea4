"""`Processor`: the base class of everything that sits in an agent's pipeline.

A processor implements any of the hooks below; the runner calls only the ones a processor
overrides. Hooks may be `def` or `async def`. The hooks, in the order a run meets them:

- `process_input` — once, before the loop (`ProcessInputArgs`)
- `process_input_step` — before every model call (`ProcessInputStepArgs`)
- `process_llm_request` — on the exact V2 prompt, right before the provider call
- `process_api_error` — when the provider call fails
- `process_output_stream` — on every chunk
- `process_output_step` — after each model response, before tools run
- `process_llm_response` — then, with the step's chunks (`accepted` tells a rejected step apart)
- `process_tool_call` — before a tool runs, to change only what the tool receives
- `process_tool_result` — after each tool returns, before its result is used anywhere
- `process_output_result` — once, at the end

Besides these, optional hooks the runner calls when a processor overrides them (declared below
with their types, so a subclass's signature is checked): `flush_output_stream` (release what the
stream hook held back, at the end of each model step), `stream_deadline` / `on_stream_deadline`
(release held chunks on time, see `BatchPartsProcessor`), `max_output_tokens_for` (cap the next
model call), `suspend_state` (what of `state` survives a human-in-the-loop suspension), and the
flags `counts_redactions`, `checks_input_only`, `run_in_parallel`, `judges_windows()` and
`transforms_text()`. `implements(processor, name)` tells an override from the base's no-op.

A processor that keeps a store (`store`: the cost guard's budget, the call limits' counters,
the compactor's summaries) is given another one with `with_store(store)`, a copy that uses
it (a durable run hands it a stand-in whose calls are activities); `KeepsStore` types it.

Any hook may call `args.abort(reason, retry=..., metadata=...)` to stop the run; see
`sluicegate.errors.TripWire`.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar, Token
from typing import Any, ClassVar, NoReturn, Protocol, Self, runtime_checkable

from sluicegate.errors import TripWire
from sluicegate.processors.args import (
    ProcessAPIErrorArgs,
    ProcessAPIErrorResult,
    ProcessInputArgs,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessLLMResponseArgs,
    ProcessorViolation,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
    ProcessOutputStreamArgs,
    ProcessToolCallArgs,
    ProcessToolCallResult,
    ProcessToolResultArgs,
    ProcessToolResultResult,
)
from sluicegate.processors.option_check import check_options
from sluicegate.stream.chunk import Chunk
from sluicegate.tracing.metrics import record_violation

LLMRequestReturn = ProcessLLMRequestResult | dict[str, Any] | None
"""What `process_llm_request` returns (or resolves to)."""
APIErrorReturn = ProcessAPIErrorResult | dict[str, Any] | None
"""What `process_api_error` returns (or resolves to)."""
ToolResultReturn = ProcessToolResultResult | dict[str, Any] | None
"""What `process_tool_result` returns (or resolves to)."""
ToolCallReturn = ProcessToolCallResult | dict[str, Any] | None
"""What `process_tool_call` returns (or resolves to)."""

StreamRelease = list[Chunk] | Awaitable[list[Chunk]]
"""What `flush_output_stream` and `on_stream_deadline` return (or resolve to): the held chunks."""
StreamDeadline = Callable[[dict[str, Any]], float | None]
"""A bound `stream_deadline`: the `time.monotonic()` by which held chunks are due, or None."""
TokenCap = Callable[[dict[str, Any]], int | None]
"""A bound `max_output_tokens_for`: the output tokens worth asking the next call for, or None."""
StateExport = Callable[[dict[str, Any]], dict[str, Any]]
"""A bound `suspend_state`: the JSON part of a processor's `state` a suspended run keeps."""

HOOKS: tuple[str, ...] = (
    "process_input",
    "process_input_step",
    "process_llm_request",
    "process_llm_response",
    "process_api_error",
    "process_output_stream",
    "process_output_step",
    "process_output_result",
    "process_tool_result",
    "process_tool_call",
)

OPTIONAL_HOOKS: tuple[str, ...] = (
    "flush_output_stream",
    "stream_deadline",
    "on_stream_deadline",
    "max_output_tokens_for",
    "suspend_state",
    "judges_windows",
    "transforms_text",
)
"""Methods the runtime calls only when a processor overrides them (see `implements`)."""


class Processor:
    """Base class for processors. Set `id`; override the hooks you need."""

    id: str = ""
    name: str | None = None
    description: str | None = None
    process_data_parts: bool = False
    """When true, `process_output_stream` also receives `data-*` chunks."""
    processor_index: int | None = None
    """Not set by the runtime (a processor object is shared by concurrent requests): a hook
    reads its position for the current request as `args.processor_index`."""
    on_violation: Callable[[ProcessorViolation], Any] | None = None
    """Called on every abort and every warn-strategy detection; its exceptions are swallowed."""
    counts_redactions: bool = False
    """A traced run counts the redactions its stream hook reports (`tracing.findings`)."""
    run_in_parallel: bool = False
    """With `checks_input_only`: run beside the first model call (see `input_guards`)."""
    loads_context: bool = False
    """True for a processor whose `process_input` brings context in (memory's history, recall,
    working memory) rather than judging the input: text a processor writes into the prompt
    (`ContextCompactor`'s summary, `args.guard_input`) is judged by the others only."""

    _hook_names: ClassVar[tuple[str, ...]] = HOOKS

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        # Before `__init__`: a misspelled option names itself and its closest valid spelling.
        if kwargs:
            check_options(cls, kwargs)
        return super().__new__(cls)

    def __init__(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"

    # The hooks. The base versions are never called: the runner skips hooks a subclass does
    # not override (see `implements`).

    def process_input(self, args: ProcessInputArgs) -> Any:
        """Transform or validate the input once; return messages, the MessageList, a
        `{"messages", "system_messages"}` dict, or None to leave them as they are."""
        return None

    def process_input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult | Any:
        """Adjust one step: model, tools, tool choice, messages, system messages, settings."""
        return None

    def process_llm_request(
        self, args: ProcessLLMRequestArgs
    ) -> LLMRequestReturn | Awaitable[LLMRequestReturn]:
        """Rewrite the outbound V2 prompt (transiently) or answer the call from elsewhere."""
        return None

    def process_llm_response(self, args: ProcessLLMResponseArgs) -> Awaitable[None] | None:
        """React to a completed step's chunks (`from_cache` tells a replay apart)."""
        return None

    def process_api_error(self, args: ProcessAPIErrorArgs) -> APIErrorReturn | Awaitable[APIErrorReturn]:
        """Inspect a provider failure; ask for a retry with `{"retry": True}`."""
        return None

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | Any | None:
        """Return the chunk to emit (possibly changed) or None to drop it."""
        return args.part

    def process_output_step(self, args: ProcessOutputStepArgs) -> Any:
        """Validate a step's output before tools run; abort with retry to ask again."""
        return None

    def process_output_result(self, args: ProcessOutputResultArgs) -> Any:
        """Post-process the final result once."""
        return None

    def process_tool_result(
        self, args: ProcessToolResultArgs
    ) -> ToolResultReturn | Awaitable[ToolResultReturn]:
        """Inspect or replace a tool's result (`{"result": new}`) before anything uses it."""
        return None

    def process_tool_call(self, args: ProcessToolCallArgs) -> ToolCallReturn | Awaitable[ToolCallReturn]:
        """Change the arguments only the tool receives (`{"args": new}`); the tool-call chunk,
        the history and the next prompt keep what the model wrote."""
        return None

    # The optional hooks: called only when overridden (`implements`), never in their base form.

    @property
    def checks_input_only(self) -> bool:
        """True when `process_input` only checks (never changes) the input: adjacent such
        processors run concurrently (see `input_guards`)."""
        return False

    def flush_output_stream(self, args: ProcessOutputStreamArgs) -> StreamRelease:
        """At the end of each model step: release every chunk `process_output_stream` held
        back (they go on through the processors after this one)."""
        return []

    def stream_deadline(self, state: dict[str, Any]) -> float | None:
        """When held chunks are due (`time.monotonic()`); the loop then calls
        `on_stream_deadline` without waiting for the next chunk."""
        return None

    def on_stream_deadline(self, args: ProcessOutputStreamArgs) -> StreamRelease:
        """The held chunks whose `stream_deadline` passed."""
        return []

    def max_output_tokens_for(self, state: dict[str, Any]) -> int | None:
        """The `max_output_tokens` worth asking the next model call for (the smallest wins)."""
        return None

    def suspend_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """What of `state` a suspended run keeps (a JSON object); `state` starts empty after a
        resume for a processor that does not override this."""
        return {}

    def judges_windows(self) -> bool:
        """True for a stream guardrail that judges windows of text (see `judge_panels`)."""
        return False

    def transforms_text(self) -> bool:
        """True when the stream hook rewrites text deterministically (see `guardrails.shadow`)."""
        return False

    def with_store(self, store: Any) -> Self:
        """A copy of this processor that keeps `store` as its `store`; this one is unchanged
        (runs using it go on with its own store). A processor that checks its store's type or
        derives other fields from it overrides this (and calls it for the copy)."""
        if getattr(self, "store", None) is None:
            raise TypeError(f"{type(self).__name__} keeps no store: with_store() has nothing to replace")
        if store is None:
            raise TypeError(f"{type(self).__name__}.with_store() needs a store, got None")
        made = copy.copy(self)
        made.store = store  # type: ignore[attr-defined]  # the copy's own field
        return made


@runtime_checkable
class KeepsStore(Protocol):
    """A processor that keeps a store and is given another one through `with_store` (every
    `Processor` subclass with a `store` is one)."""

    store: Any

    def with_store(self, store: Any) -> Any: ...


def implements(processor: Any, hook: str) -> bool:
    """Whether `processor` provides `hook` (or an optional hook) itself, not the no-op of
    `Processor`; an object that is not a `Processor` provides what it has."""
    method = getattr(processor, hook, None)
    if method is None or not callable(method):
        return False
    if isinstance(processor, Processor):
        if hook in vars(processor):
            return True
        return getattr(type(processor), hook, None) is not getattr(Processor, hook)
    return True


def optional_hook(processor: Any, hook: str) -> Callable[..., Any] | None:
    """`processor`'s own `hook` (bound), or None when it keeps the base's no-op."""
    return getattr(processor, hook) if implements(processor, hook) else None


def flag(processor: Any, name: str) -> bool:
    """A processor's boolean option (`counts_redactions`, `process_data_parts`, ...); False for an
    object that is not a `Processor` and does not set it."""
    return bool(getattr(processor, name, False))


def processor_id(processor: Any) -> str:
    pid = getattr(processor, "id", None)
    if not isinstance(pid, str) or not pid:
        raise TypeError(f"processor {processor!r} has no `id`; give every processor a unique string id")
    return pid


_log = logging.getLogger("sluicegate.processors")


def make_abort(pid: str) -> Callable[..., NoReturn]:
    """The `abort` function handed to processor `pid`: raises `TripWire` tagged with it."""

    def abort(reason: str | None = None, *, retry: bool = False, metadata: Any = None) -> NoReturn:
        raise TripWire(
            reason if reason is not None else f"Tripwire triggered by {pid}",
            retry=retry,
            metadata=metadata,
            processor_id=pid,
        )

    return abort


_pending_reports: set[asyncio.Task[None]] = set()


def _count_violation(processor: Any) -> None:
    """The `sluicegate.processor.violations` metric (a no-op until a meter provider exists)."""
    try:
        record_violation(processor_id(processor))
    except Exception:
        _log.debug("could not count a violation of %r", processor, exc_info=True)


class ReportCollector:
    """Async `on_violation` calls made by synchronous code during one hook call; the runner
    awaits them right after the hook returns (see `collecting_reports`)."""

    __slots__ = ("open", "pending")

    def __init__(self) -> None:
        self.open = True
        self.pending: list[tuple[Any, Awaitable[Any]]] = []

    async def drain(self) -> None:
        self.open = False
        for processor, pending in self.pending:
            await _logged(processor, pending)
        self.pending.clear()


_collector: ContextVar[ReportCollector | None] = ContextVar("sluicegate_violation_reports", default=None)


def collecting_reports() -> tuple[ReportCollector, Token[ReportCollector | None]]:
    """Start collecting async `on_violation` calls; `stop_collecting(token)` and `drain()` after."""
    collector = ReportCollector()
    return collector, _collector.set(collector)


def stop_collecting(token: Token[ReportCollector | None]) -> None:
    _collector.reset(token)


async def _logged(processor: Any, pending: Awaitable[Any]) -> None:
    try:
        await pending
    except Exception:
        _log.warning("on_violation of %r raised", processor, exc_info=True)


_muted: ContextVar[bool] = ContextVar("sluicegate_muted_reports", default=False)
"""Set while a hook runs ahead of time on text it will see again (see
`sluicegate.guardrails.shadow`): what it finds then is reported when it runs for real."""


def mute_reports() -> Token[bool]:
    """Mute violation reports in the current context until `unmute_reports(token)`."""
    return _muted.set(True)


def unmute_reports(token: Token[bool]) -> None:
    _muted.reset(token)


def reports_muted() -> bool:
    return _muted.get()


def _call_on_violation(processor: Any, message: str, detail: Any) -> Any:
    """Count the violation and call `processor.on_violation` (if set); its result, or None when
    there is no callback or it raised (logged)."""
    if _muted.get():
        return None
    _count_violation(processor)
    callback = getattr(processor, "on_violation", None)
    if callback is None:
        return None
    try:
        return callback(
            ProcessorViolation(processor_id=processor_id(processor), message=message, detail=detail)
        )
    except Exception:
        _log.warning("on_violation of %r raised", processor, exc_info=True)
        return None


async def report_violation(processor: Any, message: str, detail: Any) -> None:
    """Call `processor.on_violation` (if set) and await it when it is `async`. Never raises:
    a failing callback is logged, the run goes on."""
    result = _call_on_violation(processor, message, detail)
    if inspect.isawaitable(result):
        await _logged(processor, result)


def notify_violation(processor: Any, message: str, detail: Any) -> None:
    """`report_violation` for synchronous callers: an `async` callback is awaited by the runner
    right after the hook that reported it returns, or, outside a hook call (per-chunk stream
    hooks), scheduled on the running loop (kept referenced until it finishes). Its errors are
    logged."""
    result = _call_on_violation(processor, message, detail)
    if not inspect.isawaitable(result):
        return
    collector = _collector.get()
    if collector is not None and collector.open:
        collector.pending.append((processor, result))
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        close = getattr(result, "close", None)
        if close is not None:
            close()
        _log.warning("on_violation of %r is async but no event loop is running; not called", processor)
        return
    task = loop.create_task(_logged(processor, result))
    _pending_reports.add(task)
    task.add_done_callback(_pending_reports.discard)
