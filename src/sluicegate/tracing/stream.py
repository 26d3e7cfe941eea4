"""`output_stream` spans: one per processor per step, from the counters the runner's per-chunk
loop keeps on a traced run (see `sluicegate.processors.stream_counts`).

`StreamTracker.counts_for` hands the runner one `PipelineCounts` per list of stream entries;
`flush` (at each model call and at the end of the run) turns them into spans and resets them.
`sluicegate.hook.duration_ms` is the sampled hook time scaled to all chunks the processor saw
(`sluicegate.stream.chunks_timed` says how many were measured).

The outcome compares what the processor was given with what it passed on (its `TextTrack`):
`modified` when they differ (the text, or a chunk other than text dropped, replaced or added),
`held` when it dropped or replaced chunks but the text came out the same (a hold-back that
regrouped it), with `sluicegate.stream.held_chars` and `.held_ms`. With `capture_changes` a
modified processor's span also carries the text before and after it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from sluicegate.errors import TripWire
from sluicegate.processors.stream_counts import PipelineCounts, TextTrack
from sluicegate.tracing import attributes as attr
from sluicegate.tracing.metrics import Instruments


class RunSpans(Protocol):
    """What the tracker needs of the run's trace (`sluicegate.tracing.spans.RunTrace`)."""

    tracer: trace.Tracer
    metrics: Instruments
    base: dict[str, Any]
    context: otel_context.Context
    capture_changes: bool


class _Totals:
    __slots__ = (
        "dropped",
        "entry",
        "error",
        "modified",
        "seen",
        "timed_ns",
        "timed_seen",
        "track",
    )

    def __init__(self, entry: Any, track: TextTrack | None) -> None:
        self.entry = entry
        self.track = track
        self.seen = 0
        self.dropped = 0
        self.modified = 0
        self.timed_ns = 0
        self.timed_seen = 0
        self.error: BaseException | None = None


class StreamTracker:
    """The run's per-chunk counters and the step they are counting for."""

    def __init__(self, run_trace: RunSpans) -> None:
        self.run_trace = run_trace
        self.pipelines: dict[tuple[int, ...], PipelineCounts] = {}
        self.step_number = 0
        self.step_start_ns = time.time_ns()
        self.tracks: dict[int, TextTrack] = {}

    def step_started(self, step_number: int) -> None:
        self.step_number = step_number
        self.step_start_ns = time.time_ns()

    def counts_for(self, entries: list[Any]) -> PipelineCounts:
        """The counters for `entries` (cached: fan-outs ask again per chunk)."""
        key = tuple(id(e) for e in entries)
        counts = self.pipelines.get(key)
        if counts is None:
            tracks = []
            for stream_entry in entries:
                track = self.tracks.get(id(stream_entry.entry))
                if track is None:
                    track = self.tracks[id(stream_entry.entry)] = TextTrack(self.run_trace.capture_changes)
                tracks.append(track)
            counts = self.pipelines[key] = PipelineCounts(entries, tracks)
        return counts

    def flush(self) -> None:
        """End the current step's `output_stream` spans and reset the counters."""
        totals: dict[int, _Totals] = {}
        for state in self.pipelines.values():
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
                    track = self.tracks.get(id(stream_entry.entry))
                    total = totals[id(stream_entry.entry)] = _Totals(stream_entry.entry, track)
                total.seen += seen
                total.dropped += counts.dropped
                total.modified += counts.modified
                total.timed_ns += counts.timed_ns
                total.timed_seen += counts.timed_seen
                if counts.error is not None:
                    total.error = counts.error
            state.reset()
        if totals:
            self._end_spans(totals.values())
        for track in self.tracks.values():
            track.reset()
        self.step_start_ns = time.time_ns()

    def _end_spans(self, totals: Iterable[_Totals]) -> None:
        run_trace = self.run_trace
        end = time.time_ns()
        for total in totals:
            if total.seen == 0 and total.error is None:
                continue
            pid = total.entry.pid
            duration_ms = total.timed_ns * total.seen / total.timed_seen / 1e6 if total.timed_seen else 0.0
            outcome, reason, retry = _outcome(total)
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
                attributes[attr.TRIPWIRE_REASON] = reason or ""
                attributes[attr.TRIPWIRE_RETRY] = retry
            elif outcome == attr.ERROR:
                attributes[attr.ERROR_TYPE] = reason or "Exception"
            track = total.track
            if track is not None:
                track.finish()
                if track.held_chars > 0:
                    attributes[attr.STREAM_HELD_CHARS] = track.held_chars
                    attributes[attr.STREAM_HELD_MS] = round(track.held_ns / 1e6, 3)
                if outcome == attr.MODIFIED and run_trace.capture_changes:
                    attributes[attr.CONTENT_BEFORE] = "".join(track.given)
                    attributes[attr.CONTENT_AFTER] = "".join(track.parts)
            span = run_trace.tracer.start_span(
                f"{attr.PROCESSOR} {pid} output_stream",
                context=run_trace.context,
                attributes=attributes,
                start_time=self.step_start_ns,
            )
            if outcome == attr.ERROR:
                span.set_status(Status(StatusCode.ERROR, reason or "processor failed"))
            if track is not None:
                add_redactions(span, track.redactions)
            span.end(end_time=end)
            metric_attributes = {attr.PROCESSOR_ID: pid, attr.PROCESSOR_PHASE: "output_stream"}
            run_trace.metrics.hook_duration.record(duration_ms, metric_attributes)
            if outcome in (attr.ABORT, attr.RETRY):
                run_trace.metrics.tripwires.add(1, {**metric_attributes, attr.TRIPWIRE_RETRY: retry})
                if retry:
                    run_trace.metrics.retries.add(1, metric_attributes)


def _outcome(total: _Totals) -> tuple[str, str | None, bool]:
    """(outcome, tripwire reason or error type, retry) of one processor's step."""
    error = total.error
    if isinstance(error, TripWire):
        return (attr.RETRY if error.retry else attr.ABORT), str(error.reason), bool(error.retry)
    if error is not None:
        return attr.ERROR, type(error).__name__, False
    track = total.track
    if not (total.dropped or total.modified or (track is not None and track.changed_other)):
        return attr.PASS, None, False
    if track is None or track.changed():
        return attr.MODIFIED, None, False
    return (attr.HELD if track.held_chars else attr.PASS), None, False


def add_redactions(span: Any, redactions: dict[str, int]) -> None:
    """One `sluicegate.redaction` event per kind a guardrail redacted while the processor ran."""
    for kind, count in sorted(redactions.items()):
        span.add_event(attr.REDACTION_EVENT, {attr.REDACTION_KIND: kind, attr.REDACTION_COUNT: count})
