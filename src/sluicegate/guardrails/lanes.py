"""The bookkeeping of windowed judging (see `guardrails.windows`): each text channel as the model
wrote it, one lane per panel member with its windows in flight, its release point and the
redactions its verdicts asked for."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from sluicegate.guardrails.judgement import DEFAULT_MAX_VALUE_CHARS, Judge, Judgement, Release
from sluicegate.stream.chunk import Chunk, TextPayload


class Window:
    __slots__ = ("end", "start", "task", "timed")

    def __init__(self, start: int, end: int, task: asyncio.Task[Judgement], timed: bool) -> None:
        self.start = start
        self.end = end
        self.task = task
        self.timed = timed
        """Closed by `max_hold_ms`: its text is released up to its last whitespace."""


def consume(task: asyncio.Task[Any]) -> None:
    """Mark a judgement's exception as seen when the run ended before it was collected."""
    if not task.cancelled():
        task.exception()


def remove(value: str, kind: str) -> str:
    return ""


class Redaction:
    """A rewrite of channel text `[start, end)` decided by one member's verdict."""

    __slots__ = ("end", "kind", "member", "replace", "start")

    def __init__(
        self, start: int, end: int, kind: str, replace: Callable[[str, str], str] | None, member: int
    ) -> None:
        self.start = start
        self.end = end
        self.kind = kind
        self.replace = replace
        self.member = member


class Lane:
    """One member's windows over one channel: what it judged, what it vetted, and the
    redactions its verdicts asked for that are not released yet."""

    __slots__ = (
        "chunks_since",
        "held_since",
        "judged_to",
        "oversized",
        "redactions",
        "vetted_to",
        "windows",
    )

    def __init__(self) -> None:
        self.judged_to = 0
        self.vetted_to = 0
        """The member's own release point: no verdict of its still to come can change text
        before it."""
        self.windows: list[Window] = []
        self.redactions: list[Redaction] = []
        self.held_since: float | None = None
        self.chunks_since = 0
        self.oversized = -1
        """Where the last value redacted for outgrowing `max_value_chars` was cut (-1: none):
        the rest of that value is redacted too."""


class Channel:
    """One text channel (text or reasoning) as the model wrote it, shared by the members:
    what was released, the text ids, the held `*-start`/`*-end` markers, and one lane per
    member."""

    __slots__ = (
        "altered",
        "closed",
        "confirmed",
        "diverged",
        "lanes",
        "make",
        "markers",
        "name",
        "out",
        "pending",
        "pieces",
        "released",
        "resyncs",
        "run_id",
        "segments",
        "total",
        "view",
        "view_from",
    )

    def __init__(self, name: str, make: Callable[[str, str, str], Chunk], members: int) -> None:
        self.name = name
        self.make = make
        self.lanes = [Lane() for _ in range(members)]
        self.pieces: list[str] = []
        self.total = 0
        self.released = 0
        self.segments: list[tuple[int, str]] = []
        """(offset where a text id starts, the id)."""
        self.markers: list[tuple[int, Chunk]] = []
        """`*-start`/`*-end` chunks held with the text, at the offset they arrived."""
        self.run_id = ""
        self.out: list[str] = []
        """The text released so far (vetted release)."""
        self.altered = False
        """Whether a redaction changed released text (the released text is not the raw text)."""
        # A panel further down the chain (`guardrails.speculative`) judges a view of the text
        # computed ahead of time; these track how its own input compares with that view.
        self.confirmed = 0
        """How much of its input arrived and equals the view."""
        self.pending = ""
        """Input past `confirmed`, waiting for the view to catch up."""
        self.diverged = False
        """The input differed from the view: the channel now holds the input itself."""
        self.closed = False
        """The view will not grow (it ended, or the processors making it stopped)."""
        self.view = ""
        """Once diverged: the view, kept to find where the input meets it again."""
        self.view_from = 0
        self.resyncs = 0

    def text(self) -> str:
        if len(self.pieces) > 1:
            self.pieces = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""

    def id_at(self, offset: int) -> str:
        current = self.segments[0][1] if self.segments else ""
        for start, id_ in self.segments:
            if start > offset:
                break
            current = id_
        return current

    def reset(self) -> None:
        self.pieces = []
        self.total = self.released = 0
        self.segments = []
        self.markers = []
        self.out = []
        self.altered = False
        self.confirmed = 0
        self.pending = ""
        self.diverged = self.closed = False
        self.view = ""
        self.view_from = self.resyncs = 0
        for lane in self.lanes:
            lane.judged_to = lane.vetted_to = 0
            lane.windows = []
            lane.redactions = []
            lane.held_since = None
            lane.chunks_since = 0
            lane.oversized = -1


def reasoning_delta(run_id: str, id: str, text: str) -> Chunk:
    return Chunk("reasoning-delta", run_id, TextPayload(id, text))


CHANNELS = {"text-delta": "text", "reasoning-delta": "reasoning"}
MARKERS = {
    "text-start": "text",
    "text-end": "text",
    "reasoning-start": "reasoning",
    "reasoning-end": "reasoning",
}


class Member:
    """One guardrail of a panel: its judge, its window options and its stream hook arguments."""

    __slots__ = (
        "args",
        "chunk_window",
        "judge",
        "max_hold",
        "max_value",
        "on_text_done",
        "optimistic",
        "overlap",
        "position",
        "processor_id",
        "report",
        "window_chars",
    )

    def __init__(
        self,
        judge: Judge,
        args: Any,
        *,
        position: int,
        window_chars: int,
        overlap_chars: int,
        max_hold_ms: float,
        release: Release,
        chunk_window: int,
        processor_id: str,
        on_text_done: Callable[[str, Any], None] | None,
        max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
        report: Callable[[str, Any], None] | None = None,
    ) -> None:
        self.judge = judge
        self.args = args
        self.position = position
        self.window_chars = window_chars
        self.overlap = overlap_chars
        self.max_hold = max_hold_ms / 1000
        self.max_value = max_value_chars
        self.report = report
        """Tells the guardrail's `on_violation` (message, detail) about a value redacted for its
        length."""
        self.optimistic = release == "optimistic"
        self.chunk_window = chunk_window
        self.processor_id = processor_id
        self.on_text_done = on_text_done
        """Called with the text released by a finished run of text (see `WindowedGuard`)."""


def value_start(text: str, end: int, limit: int) -> int:
    """Where the value (run of text without whitespace) that touches `end` begins: `end` when
    the text before it ends in whitespace. A value touching the end of what was seen may still
    be growing, so no window may release part of it. Looks back `limit` + 1 characters at most
    (a value longer than `limit` reports a start `limit` + 1 back)."""
    if end <= 0 or text[end - 1].isspace():
        return end
    floor = max(0, end - limit - 1)
    low, step = end, 64
    while low > floor:  # widening from the end: a value is usually short
        low = max(floor, low - step)
        found = _LAST_SPACE.search(text, low, end)
        if found is not None:
            return found.end()
        step *= 4
    return floor


def value_end(text: str, start: int, end: int) -> int:
    """Where the value running on at `start` ends, looking no further than `end`."""
    found = _SPACE.search(text, start, end)
    return found.start() if found is not None else end


_SPACE = re.compile(r"\s")
_LAST_SPACE = re.compile(r"\s(?=\S*\Z)")


class Deferred(Exception):
    """A later member's verdict failed; its own stream hook raises it (see `follow`)."""
