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

Text is followed per processor (`TextTrack`): the text of each `text-delta` a processor passes
on is appended to its track, so at the end of the step its input (the previous processor's
track, or the model's text) and its output can be compared. That is what tells a processor that
changed the text ("modified") from one that only held it back and regrouped it ("held"); the
clock is read only when the amount held starts or stops being positive.
"""

from __future__ import annotations

import time
from typing import Any

from sluicegate.tracing.findings import RedactionSink

EXACT_CHUNKS = 64
SAMPLE_MASK = 15  # after EXACT_CHUNKS, time one chunk in 16


class ProcessorCounts:
    """One processor's counters in one pipeline, for the current step."""

    __slots__ = (
        "dropped",
        "error",
        "modified",
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
        self.error: BaseException | None = None
        """What the hook raised this step (a `TripWire`, or the exception it failed with)."""

    def stop(self, is_data: bool) -> None:
        if is_data:
            self.stopped_data += 1
        else:
            self.stopped += 1


class TextTrack:
    """The text one processor passed on during the current step, and how much it held back.

    `held_chars` is the most text it held at once (its input so far minus its output so far);
    `held_ns` the longest stretch during which it held any. `redactions` counts, by kind, what
    guardrails reported redacting while this processor ran (see `sluicegate.tracing.findings`).
    """

    __slots__ = (
        "changed_other",
        "held_chars",
        "held_ns",
        "held_since",
        "length",
        "parts",
        "redactions",
        "upstream",
    )

    def __init__(self, upstream: TextTrack | None = None) -> None:
        self.upstream = upstream
        """The track of the text this processor receives (None: the model's own)."""
        self.reset()

    def reset(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.held_chars = 0
        self.held_ns = 0
        self.held_since = 0
        self.redactions: dict[str, int] = {}
        self.changed_other = 0
        """Chunks other than text deltas it dropped, replaced or added (text is compared)."""

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def add_chunks(self, chunks: Any, given: Any = None) -> None:
        """Chunks it passed on in place of `given` (None: released from what it held)."""
        kept = False
        for chunk in chunks:
            if chunk is given:
                kept = True
            kind = chunk.get("type") if isinstance(chunk, dict) else getattr(chunk, "type", None)
            if kind == "text-delta":
                text = chunk.payload.text if not isinstance(chunk, dict) else chunk.get("text", "")
                self.add(str(text))
            elif chunk is not given:
                self.changed_other += 1
        if given is not None and not kept and getattr(given, "type", None) != "text-delta":
            self.changed_other += 1

    def replaced(self, given: Any, result: Any) -> None:
        """It returned `result` (a chunk, or None) for `given`."""
        given_text = given.type == "text-delta"
        if result is None:
            if not given_text:
                self.changed_other += 1
            return
        if result.type == "text-delta":
            self.add(result.payload.text)
            if not given_text:
                self.changed_other += 1
        else:
            self.changed_other += 1

    def settle(self) -> None:
        """After the processor dropped, replaced or released chunks: update what it holds."""
        upstream = self.upstream
        if upstream is None:
            return
        held = upstream.length - self.length
        if held > self.held_chars:
            self.held_chars = held
        if held > 0:
            if not self.held_since:
                self.held_since = time.perf_counter_ns()
        elif self.held_since:
            self._release(time.perf_counter_ns())

    def _release(self, now: int) -> None:
        self.held_ns = max(self.held_ns, now - self.held_since)
        self.held_since = 0

    def finish(self) -> None:
        """The step ended: close a hold still open."""
        if self.held_since:
            self._release(time.perf_counter_ns())

    def text(self) -> str:
        return "".join(self.parts)


class PipelineCounts:
    """One per-chunk function's counters: chunks in, and one `ProcessorCounts` and `TextTrack`
    per entry. `head` is the model's text, kept by the run's main pipeline only (a fan-out's
    pipeline starts from the track of the processor that fanned out)."""

    __slots__ = ("calls", "counts", "data_calls", "entries", "head", "mask", "sink", "tracks")

    def __init__(
        self,
        entries: list[Any],
        tracks: list[TextTrack] | None = None,
        head: TextTrack | None = None,
        sink: RedactionSink | None = None,
    ) -> None:
        self.entries = entries
        self.counts = [ProcessorCounts() for _ in entries]
        self.tracks = tracks if tracks is not None else [TextTrack() for _ in entries]
        self.head = head
        self.sink = sink if sink is not None else RedactionSink()
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
