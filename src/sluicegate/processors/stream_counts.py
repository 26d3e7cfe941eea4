"""What the per-chunk loop counts while a run is traced.

`ProcessorRunner`'s per-chunk function keeps these counters only when the run is traced
(`runner.stream_counts` is set by `sluicegate.tracing`); untraced, it pays one `None` check per
chunk for them. `sluicegate.tracing.stream` turns the counters into one `output_stream` span per
processor per step. Nothing here knows OpenTelemetry.

Per chunk the loop adds one to `calls` (and `data_calls` for a `data-*` chunk; it does so
inline, as it decides whether to time the chunk, to keep the traced per-chunk cost down); drops,
replacements, fan-outs and failures are counted only when they happen. A processor's chunks
seen are derived at the end of the step from the chunks that entered the pipeline minus those
that earlier processors stopped (dropped, fanned out or failed on).

Hook time is measured for every chunk of the first EXACT_CHUNKS of a step, then for every 16th:
reading the clock per processor per chunk would cost more than the rest of the tracing together.
"""

from __future__ import annotations

from typing import Any

EXACT_CHUNKS = 64
SAMPLE_MASK = 15  # after EXACT_CHUNKS, time one chunk in 16


class ProcessorCounts:
    """One processor's counters in one pipeline, for the current step."""

    __slots__ = ("dropped", "error", "modified", "stopped", "stopped_data", "timed_ns", "timed_seen")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.stopped = 0
        self.stopped_data = 0
        self.dropped = 0
        self.modified = 0
        self.timed_ns = 0
        self.timed_seen = 0
        self.error: BaseException | None = None
        """What the hook raised this step (a `TripWire`, or the exception it failed with)."""

    def stop(self, is_data: bool) -> None:
        if is_data:
            self.stopped_data += 1
        else:
            self.stopped += 1


class PipelineCounts:
    """One per-chunk function's counters: chunks in, and one `ProcessorCounts` per entry."""

    __slots__ = ("calls", "counts", "data_calls", "entries", "mask")

    def __init__(self, entries: list[Any]) -> None:
        self.entries = entries
        self.counts = [ProcessorCounts() for _ in entries]
        self.calls = 0
        self.data_calls = 0
        self.mask = 0

    def reset(self) -> None:
        self.calls = 0
        self.data_calls = 0
        self.mask = 0
        for counts in self.counts:
            counts.reset()

    def timed(self, index: int, elapsed_ns: int) -> None:
        counts = self.counts[index]
        counts.timed_ns += elapsed_ns
        counts.timed_seen += 1

    def dropped(self, index: int, is_data: bool) -> None:
        counts = self.counts[index]
        counts.dropped += 1
        counts.stop(is_data)

    def replaced(self, index: int) -> None:
        self.counts[index].modified += 1

    def fanned_out(self, index: int, is_data: bool) -> None:
        counts = self.counts[index]
        counts.modified += 1
        counts.stop(is_data)

    def failed(self, index: int, is_data: bool, error: BaseException) -> None:
        counts = self.counts[index]
        counts.stop(is_data)
        counts.error = error
