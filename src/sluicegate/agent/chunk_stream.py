"""The per-chunk pipeline of a model call, written once: each model part becomes a chunk, goes
through the output stream processors, is recorded into the step and handed on; at a deadline
marker the processors' timed flushes go out, and when the stream ends what they held back.

Both ways of calling a model run this function: a run in one process (`model_step`) and a
durable run's model activity (`durable/temporal/activities.py`), so a processor sees the same
chunks, in the same order, wherever the call runs.

This is the hot path, kept flat on purpose: its locals bound before the loop, no per-chunk
validation or copying, a text delta built straight from its part.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from sluicegate.agent.model_parts import convert
from sluicegate.agent.step import StepRecorder
from sluicegate.processors.runner import ProcessorRunner
from sluicegate.processors.stream_pipeline import StreamPipeline
from sluicegate.stream.chunk import Chunk, TextPayload

if TYPE_CHECKING:
    from sluicegate.agent.observe import LogTap
    from sluicegate.stream.run_log import TextSink


class Handover:
    """What a step yields instead of relaying its model call's chunks itself: the run's loop
    iterates `chunks` directly (one generator hop less per chunk on the hot path) and throws a
    failure back into the step at the point it yielded this, where the step recovers from it
    (error processors, the next fallback model) as if it had iterated them itself."""

    __slots__ = ("chunks",)

    def __init__(self, chunks: AsyncGenerator[Chunk, None]) -> None:
        self.chunks = chunks


DEADLINE = {"type": "__deadline__"}
"""The marker a deadline-aware source yields when a stream processor's timed flush is due
(see `deadline_stream.with_deadlines`)."""


async def stream_chunks(
    source: AsyncIterator[Any],
    step: StepRecorder,
    runner: ProcessorRunner,
    pipeline: StreamPipeline | None,
    drain: Callable[[], Awaitable[list[Chunk]]],
    *,
    pending: list[Chunk],
    keep: Callable[[Chunk], None] | None = None,
    on_tool_result: Callable[[Chunk, StepRecorder], Awaitable[None]] | None = None,
    before_flush: Awaitable[Any] | None = None,
    tap: LogTap | None = None,
) -> AsyncGenerator[Chunk, None]:
    """The chunks of one model call's `source` (model parts, or a replayed response's chunks).

    `pending` is what processors wrote meanwhile, handed on through `drain` after the chunk
    that made them; `keep` receives each model-level chunk before the processors see it (for
    `process_llm_response`; a copy when processors may change it); `on_tool_result` sees a
    provider-executed tool's result first; `before_flush` is awaited before the end-of-stream
    flush (the parallel input guards: no tool runs before they pass). With a `tap`, each chunk
    is appended to the run's log as it is yielded; a text delta that goes out as it was built
    from its part (no processors) is written to the log's `TextSink` when it has one, as its
    text alone."""
    run_id = runner.run_id
    record = step.record
    sink, append, put_text, waiting = _bound_log(tap, run_id, pipeline)
    if tap is not None:
        drain = _putting(drain, tap)
    async for part in source:
        # ---- the hot path: one model part -> one chunk -> processors -> client
        if part.__class__ is dict and part["type"] == "text-delta":
            chunk = Chunk("text-delta", run_id, TextPayload(part["id"], part["delta"]))
            if sink is not None:
                # No processors and a log that keeps texts: this delta's whole way out, inline
                # (what the end of the loop does, without the checks that do not apply). The
                # sink keeps the text alone, with the held list's own append (see `TextSink`).
                if keep is not None:
                    keep(chunk)
                payload = chunk.payload
                text = payload.text
                pieces = step.open_text
                if pieces is None:
                    pieces = step.start_text()
                pieces.append(text)
                try:
                    if payload.id != sink.text_id:
                        sink.begin(payload.id)
                    put_text(text)
                    if waiting:
                        sink.wake()
                except Exception:  # a failing log never breaks the run
                    append = sink = None
                    tap.broken()  # type: ignore[union-attr]  # a sink comes only with a tap
                yield chunk
                if pending:
                    for extra in await drain():
                        yield extra
                continue
        elif part.__class__ is Chunk and part.type == "text-delta":  # a replayed response
            part.run_id = run_id
            chunk = part
        else:
            if part is DEADLINE:
                for flushed in _put_all(await runner.run_stream_deadlines(), tap):
                    record_chunk(flushed, step)
                    yield flushed
                if pending:
                    for extra in await drain():
                        yield extra
                continue
            converted = convert(part, step, run_id)
            if converted is None:
                continue
            if on_tool_result is not None and converted.type == "tool-result":
                await on_tool_result(converted, step)
            chunk = converted
        if keep is not None:
            keep(chunk if pipeline is None else chunk.copy())
        if pipeline is not None:
            result = await pipeline(chunk)
            if result is None:
                if pending:
                    for extra in await drain():
                        yield extra
                continue
            if result.__class__ is not Chunk:
                for out in _put_all(result, tap):  # type: ignore[arg-type]  # a list: checked by class, cheaper
                    record_chunk(out, step)
                    yield out
                if pending:
                    for extra in await drain():
                        yield extra
                continue
            chunk = result
        if chunk.type == "text-delta":
            pieces = step.open_text
            if pieces is None:
                pieces = step.start_text()
            pieces.append(chunk.payload.text)
        else:
            record(chunk)
        if append is not None:
            try:
                append(chunk)
            except Exception:  # a failing log never breaks the run
                append = sink = None
                tap.broken()  # type: ignore[union-attr]  # `append` is set only with a tap
        yield chunk
        if pending:
            for extra in await drain():
                yield extra
    if before_flush is not None:
        await before_flush
    if pipeline is not None and runner.flushes_stream:
        # The step's text is over: processors holding some back release it now.
        for flushed in _put_all(await runner.flush_stream(), tap):
            record_chunk(flushed, step)
            yield flushed
        for extra in await drain():
            yield extra


def _bound_log(
    tap: LogTap | None, run_id: str, pipeline: StreamPipeline | None
) -> tuple[TextSink | None, Callable[[Chunk], None] | None, Callable[[str], None], list[Any]]:
    """The run's log as one call binds it: its text sink (only with no processors, which could
    change a delta: the log stops if it cannot be had), its append, the sink's `put` and its
    waiting readers. All None (and no-ops) without a log."""
    sink = tap.text_sink(run_id) if tap is not None and pipeline is None else None
    if sink is None:
        return None, tap.append if tap is not None else None, _no_text, []
    return sink, tap.append if tap is not None else None, sink.put, sink.waiters


def _no_text(text: str) -> None:
    return None


def _put_all(chunks: list[Chunk], tap: LogTap | None) -> list[Chunk]:
    """`chunks` (emitted off the inline path), each appended to the run's log first."""
    if tap is not None:
        for chunk in chunks:
            tap.put(chunk)
    return chunks


def _putting(
    drain: Callable[[], Awaitable[list[Chunk]]], tap: LogTap
) -> Callable[[], Awaitable[list[Chunk]]]:
    """`drain`, its chunks appended to the run's log as they are drained."""

    async def drained() -> list[Chunk]:
        return _put_all(await drain(), tap)

    return drained


def record_chunk(chunk: Chunk, step: StepRecorder) -> None:
    """A chunk emitted outside the inline path (flushed or returned in a list), into the step."""
    if chunk.type == "text-delta":
        pieces = step.open_text if step.open_text is not None else step.start_text()
        pieces.append(chunk.payload.text)
    else:
        step.record(chunk)
