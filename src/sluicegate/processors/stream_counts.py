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

What a processor was given and passed on is kept per processor (`TextTrack`) from the first
chunk it does not pass through unchanged, so at the end of the step the two can be compared:
that tells a processor that changed the text ("modified") from one that only held it back and
regrouped it ("held"). A processor that passes every chunk through costs one flag check per
chunk; the clock is read only when the amount held starts or stops being positive.
Redactions are counted per processor only for those that declare `counts_redactions`
(see `sluicegate.tracing.findings`).
"""

from __future__ import annotations

import time
from typing import Any

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
    """What one processor was given and passed on during the current step, from the first
    chunk it did not pass through unchanged (or from the start, with `record_all`): until then
    what it passed on is what it was given, so nothing needs keeping for it.

    `given`/`parts` are the text of the `text-delta`s in and out; `given_others`/`others` the
    other chunks, by identity, so holding a chunk back and releasing it later (in order) is no
    change, while dropping, replacing or adding one is. `data-*` chunks reach only some
    processors: dropping, replacing or adding one counts in `changed_other` at once. `held` is
    the text held back now (characters in minus out), `held_chars` the most held at once,
    `held_ns` the longest stretch during which it held any. `redactions` counts, by kind, what
    guardrails reported redacting while this processor ran (see `sluicegate.tracing.findings`).
    """

    __slots__ = (
        "changed_other",
        "given",
        "given_others",
        "held",
        "held_chars",
        "held_ns",
        "held_since",
        "others",
        "parts",
        "record_all",
        "recording",
        "redactions",
    )

    def __init__(self, record_all: bool = False) -> None:
        self.record_all = record_all
        self.redactions: dict[str, int] = {}
        self.reset()

    def reset(self) -> None:
        self.recording = self.record_all
        self.given: list[str] = []
        self.parts: list[str] = []
        self.given_others: list[Any] = []
        self.others: list[Any] = []
        self.held = 0
        self.held_chars = 0
        self.held_ns = 0
        self.held_since = 0
        self.redactions.clear()
        self.changed_other = 0

    def take(self, chunk: Any) -> None:
        """`chunk` was given to it (called once it records)."""
        kind = chunk.type
        if kind == "text-delta":
            text = chunk.payload.text
            self.given.append(text)
            self.held += len(text)
        elif not kind.startswith("data-"):
            self.given_others.append(chunk)

    def passed(self, chunk: Any) -> None:
        """`chunk` went through unchanged (called once it records)."""
        kind = chunk.type
        if kind == "text-delta":
            text = chunk.payload.text
            self.given.append(text)
            self.parts.append(text)
        elif not kind.startswith("data-"):
            self.given_others.append(chunk)
            self.others.append(chunk)

    def put(self, chunks: Any, given: Any = None) -> None:
        """Chunks it passed on in place of `given` (None: released from what it held), then
        what it holds now."""
        for chunk in chunks:
            if isinstance(chunk, dict):  # the runner builds the chunk: a new one, unless text
                if chunk.get("type") == "text-delta":
                    self._out(str(chunk.get("text", "")))
                else:
                    self.changed_other += 1
                continue
            kind = chunk.type
            if kind == "text-delta":
                self._out(chunk.payload.text)
            elif kind.startswith("data-"):
                if chunk is not given:
                    self.changed_other += 1
            else:
                self.others.append(chunk)
        if given is not None and given.type.startswith("data-") and not any(c is given for c in chunks):
            self.changed_other += 1
        self._settle()

    def _out(self, text: str) -> None:
        self.parts.append(text)
        self.held -= len(text)

    def _settle(self) -> None:
        held = self.held
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

    def changed(self) -> bool:
        """Whether what it passed on differs from what it was given."""
        if self.changed_other:
            return True
        if "".join(self.parts) != "".join(self.given):
            return True
        mine, theirs = self.others, self.given_others
        return len(mine) != len(theirs) or any(a is not b for a, b in zip(mine, theirs, strict=True))


class PipelineCounts:
    """One per-chunk function's counters: chunks in, and one `ProcessorCounts` and `TextTrack`
    per entry (the tracks are the run's, shared with fan-out pipelines)."""

    __slots__ = ("calls", "counts", "data_calls", "entries", "mask", "tracks")

    def __init__(self, entries: list[Any], tracks: list[TextTrack] | None = None) -> None:
        self.entries = entries
        self.counts = [ProcessorCounts() for _ in entries]
        self.tracks = tracks if tracks is not None else [TextTrack() for _ in entries]
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
