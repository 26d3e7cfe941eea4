"""`output_stream` spans: one per processor per step, from counters kept on the chunk path.

With tracing on, the runner builds its per-chunk function here instead (same behaviour as
`ProcessorRunner._make_pipeline`, plus counting). Per chunk it adds one counter and, per
processor, an identity check; drops, replacements and fan-outs are counted only when they
happen. A processor's `chunks_seen` is derived at the end of the step from the chunks that
entered the pipeline minus those that earlier processors dropped, fanned out or failed on.

Hook time is measured for every chunk of the first 64 of a step, then for every 16th;
`sluicegate.hook.duration_ms` is the measured time scaled to all chunks the processor saw
(`sluicegate.stream.chunks_timed` says how many were measured). Reading the clock per
processor per chunk would cost more than the rest of the tracing together.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Status, StatusCode

from sluicegate.errors import ProcessorError, TripWire
from sluicegate.processors.hook_timeout import call_watched
from sluicegate.stream.chunk import Chunk
from sluicegate.tracing import attributes as attr

if TYPE_CHECKING:
    from sluicegate.processors.runner import ProcessorRunner, StreamPipeline, _StreamEntry
    from sluicegate.tracing.spans import RunTrace

EXACT_CHUNKS = 64
SAMPLE_MASK = 15  # after EXACT_CHUNKS, time one chunk in 16


class _Counts:
    """One processor's counters in one pipeline, for the current step."""

    __slots__ = (
        "dropped",
        "modified",
        "outcome",
        "reason",
        "retry",
        "stopped",
        "stopped_data",
        "timed_ns",
        "timed_seen",
    )

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.stopped = 0
        self.stopped_data = 0
        self.dropped = 0
        self.modified = 0
        self.timed_ns = 0
        self.timed_seen = 0
        self.outcome: str | None = None
        self.reason: str | None = None
        self.retry = False

    def stop(self, is_data: bool) -> None:
        if is_data:
            self.stopped_data += 1
        else:
            self.stopped += 1


class _Pipeline:
    """One per-chunk function's state: chunks in, and the counters of its processors."""

    __slots__ = ("calls", "counts", "data_calls", "entries", "mask")

    def __init__(self, entries: list[_StreamEntry]) -> None:
        self.entries = entries
        self.counts = [_Counts() for _ in entries]
        self.calls = 0
        self.data_calls = 0
        self.mask = 0

    def reset(self) -> None:
        self.calls = 0
        self.data_calls = 0
        self.mask = 0
        for counts in self.counts:
            counts.reset()


class _Totals:
    __slots__ = (
        "dropped",
        "entry",
        "modified",
        "outcome",
        "reason",
        "retry",
        "seen",
        "timed_ns",
        "timed_seen",
    )

    def __init__(self, entry: Any) -> None:
        self.entry = entry
        self.seen = 0
        self.dropped = 0
        self.modified = 0
        self.timed_ns = 0
        self.timed_seen = 0
        self.outcome: str | None = None
        self.reason: str | None = None
        self.retry = False


class StreamTracker:
    """The run's traced per-chunk functions and the step they are counting for."""

    def __init__(self, run_trace: RunTrace) -> None:
        self.run_trace = run_trace
        self.pipelines: dict[tuple[int, ...], tuple[_Pipeline, StreamPipeline]] = {}
        self.step_number = 0
        self.step_start_ns = time.time_ns()

    def step_started(self, step_number: int) -> None:
        self.step_number = step_number
        self.step_start_ns = time.time_ns()

    def pipeline(self, runner: ProcessorRunner, entries: list[_StreamEntry]) -> StreamPipeline:
        """The traced per-chunk function for `entries` (cached: fan-outs ask again per chunk)."""
        key = tuple(id(e) for e in entries)
        cached = self.pipelines.get(key)
        if cached is None:
            state = _Pipeline(entries)
            cached = (state, _make_pipeline(runner, state))
            self.pipelines[key] = cached
        return cached[1]

    def flush(self) -> None:
        """End the current step's `output_stream` spans and reset the counters."""
        totals: dict[int, _Totals] = {}
        for state, _ in self.pipelines.values():
            if state.calls == 0:
                continue
            nondata = state.calls - state.data_calls
            data = state.data_calls
            for stream_entry, counts in zip(state.entries, state.counts, strict=True):
                seen = nondata + (data if stream_entry.data_parts else 0)
                nondata -= counts.stopped
                data -= counts.stopped_data
                total = totals.get(id(stream_entry.entry))
                if total is None:
                    total = totals[id(stream_entry.entry)] = _Totals(stream_entry.entry)
                total.seen += seen
                total.dropped += counts.dropped
                total.modified += counts.modified
                total.timed_ns += counts.timed_ns
                total.timed_seen += counts.timed_seen
                if counts.outcome is not None:
                    total.outcome, total.reason, total.retry = counts.outcome, counts.reason, counts.retry
            state.reset()
        if totals:
            self._end_spans(totals.values())
        self.step_start_ns = time.time_ns()

    def _end_spans(self, totals: Any) -> None:
        run_trace = self.run_trace
        end = time.time_ns()
        for total in totals:
            if total.seen == 0 and total.outcome is None:
                continue
            pid = total.entry.pid
            duration_ms = total.timed_ns * total.seen / total.timed_seen / 1e6 if total.timed_seen else 0.0
            outcome = total.outcome
            if outcome is None:
                outcome = attr.MODIFIED if total.dropped or total.modified else attr.PASS
            attributes: dict[str, Any] = {
                **run_trace.base,
                attr.PROCESSOR_ID: pid,
                attr.PROCESSOR_PHASE: "output_stream",
                attr.PROCESSOR_OUTCOME: outcome,
                attr.STEP_NUMBER: self.step_number,
                attr.STREAM_CHUNKS_SEEN: total.seen,
                attr.STREAM_CHUNKS_DROPPED: total.dropped,
                attr.STREAM_CHUNKS_MODIFIED: total.modified,
                attr.STREAM_CHUNKS_TIMED: total.timed_seen,
                attr.HOOK_DURATION_MS: duration_ms,
            }
            if outcome in (attr.ABORT, attr.RETRY):
                attributes[attr.TRIPWIRE_REASON] = total.reason or ""
                attributes[attr.TRIPWIRE_RETRY] = total.retry
            elif outcome == attr.ERROR:
                attributes[attr.ERROR_TYPE] = total.reason or "Exception"
            span = run_trace.tracer.start_span(
                f"{attr.PROCESSOR} {pid} output_stream",
                context=run_trace.context,
                attributes=attributes,
                start_time=self.step_start_ns,
            )
            if outcome == attr.ERROR:
                span.set_status(Status(StatusCode.ERROR, total.reason or "processor failed"))
            span.end(end_time=end)
            metric_attributes = {attr.PROCESSOR_ID: pid, attr.PROCESSOR_PHASE: "output_stream"}
            run_trace.metrics.hook_duration.record(duration_ms, metric_attributes)
            if outcome in (attr.ABORT, attr.RETRY):
                run_trace.metrics.tripwires.add(1, {**metric_attributes, attr.TRIPWIRE_RETRY: total.retry})
                if total.retry:
                    run_trace.metrics.retries.add(1, metric_attributes)


def _make_pipeline(runner: ProcessorRunner, state: _Pipeline) -> StreamPipeline:
    """`ProcessorRunner._make_pipeline`, counting into `state`. Keep the two in step."""
    entries = state.entries
    counts = state.counts
    tripped = runner._tripped
    fan_out = runner._fan_out
    coerce = runner._coerce_stream_result
    clock = time.perf_counter_ns

    async def process(chunk: Chunk) -> Any:
        calls = state.calls + 1
        state.calls = calls
        timed = not (calls & state.mask)
        if timed:
            if calls >= EXACT_CHUNKS:
                state.mask = SAMPLE_MASK
            start = clock()
        is_data = chunk.type.startswith("data-")
        if is_data:
            state.data_calls += 1
        for index, stream_entry in enumerate(entries):
            if is_data and not stream_entry.data_parts:
                continue
            entry = stream_entry.entry
            args = stream_entry.args
            args.part = chunk
            stream_entry.parts_append(chunk)
            watchdog = stream_entry.watchdog
            try:
                if watchdog is None:
                    result = entry.fn(args)
                    if entry.is_async:
                        result = await result
                else:
                    result = await call_watched(watchdog, entry, args)
            except TripWire as tripwire:
                _failed(counts[index], is_data, attr.RETRY if tripwire.retry else attr.ABORT, tripwire)
                await tripped(entry, tripwire)
                raise
            except ProcessorError as exc:
                _failed(counts[index], is_data, attr.ERROR, exc)
                raise
            except Exception as exc:
                _failed(counts[index], is_data, attr.ERROR, exc)
                raise ProcessorError(
                    f"processor {entry.pid!r} failed in process_output_stream: {exc}",
                    processor_id=entry.pid,
                    hook=entry.hook,
                ) from exc
            if timed:
                now = clock()
                tally = counts[index]
                tally.timed_ns += now - start
                tally.timed_seen += 1
                start = now
            if result is not chunk:
                tally = counts[index]
                if result is None:
                    tally.dropped += 1
                    tally.stop(is_data)
                    return None
                if result.__class__ is not Chunk:
                    result = await coerce(entry, result)
                    if result is None:
                        tally.dropped += 1
                        tally.stop(is_data)
                        return None
                    if isinstance(result, list):
                        tally.modified += 1
                        tally.stop(is_data)
                        return await fan_out(result, entries[index + 1 :])
                tally.modified += 1
                chunk = result
        return chunk

    return process


def _failed(counts: _Counts, is_data: bool, outcome: str, error: BaseException) -> None:
    counts.stop(is_data)
    counts.outcome = outcome
    if isinstance(error, TripWire):
        counts.reason = str(error.reason)
        counts.retry = bool(error.retry)
    else:
        counts.reason = type(error).__name__
