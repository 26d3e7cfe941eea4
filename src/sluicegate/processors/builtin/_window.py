"""Windowed judging of streamed output for the LLM guardrails.

Asking a detector model about every streamed chunk costs one call per token and, worse, judges
text the client has already seen (or judges a secret split over two chunks as two harmless
halves). Instead, each text channel (text, reasoning) is cut into windows of `window_chars`
characters (closed early after `chunk_window` chunks when that is set, or when the oldest
unjudged text has waited `max_hold_ms`). Each window is judged by a task started at
once, so judging runs alongside generation and windows are judged concurrently; verdicts are
applied in order.

Windows overlap by `overlap_chars`: the tail of one window is judged again at the start of the
next and is released only after that second verdict, so a value on a window boundary (shorter
than the overlap) is always judged whole by one of them. A window closed by `max_hold_ms` (a
slow stream) releases its text up to its last whitespace instead, so text keeps flowing.
With `release="vetted"` text reaches the client only after a verdict covered it; with
`release="optimistic"` it goes out at once and a later violation emits a
`data-guardrail-retraction` chunk, then aborts the run.

For a stream of N characters this makes at most ceil(N / window_chars) + 1 detector calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from sluicegate.errors import TripWire
from sluicegate.processors.builtin._detector import Span
from sluicegate.stream.chunk import Chunk, TextPayload, text_delta

Release = Literal["vetted", "optimistic"]

DEFAULT_WINDOW_CHARS = 400
DEFAULT_OVERLAP_CHARS = 128
DEFAULT_MAX_HOLD_MS = 500.0
RETRACTION = "data-guardrail-retraction"
_POLL = 0.005
"""Seconds between looks at running judgements while the model is quiet."""


@dataclass(slots=True)
class Judgement:
    """What a guardrail decided about one window: `flagged`, and for a flagged window either
    `drop` (withhold its text) or `spans` (positions in the window's text) to rewrite with
    `replace(value, type)`. Blocking is done by raising `TripWire` from the judge."""

    flagged: bool = False
    spans: list[Span] = field(default_factory=list)
    drop: bool = False
    replace: Callable[[str, str], str] | None = None
    reason: str = ""


def redaction_judgement(
    strategy: str, spans: Callable[[], list[Span]], replace: Callable[[str, str], str], reason: str
) -> Judgement:
    """A flagged window's judgement for a redacting guardrail: `"warn"` lets it through,
    `"filter"` (or a redaction whose `spans()` cannot be located) withholds it, and otherwise
    the spans are rewritten with `replace`."""
    if strategy == "warn":
        return Judgement(flagged=True, reason=reason)
    located = spans()
    if strategy == "filter" or not located:
        return Judgement(flagged=True, drop=True, reason=reason)
    return Judgement(flagged=True, spans=located, replace=replace, reason=reason)


Judge = Callable[[str, Any], Awaitable[Judgement]]
"""`judge(window_text, args)`: the guardrail's verdict on one window (`args` are the stream
hook's arguments: `abort`, `message_list`, ...)."""


def check_window_options(window_chars: int, overlap_chars: int, max_hold_ms: float, release: str) -> None:
    if not isinstance(window_chars, int) or window_chars < 1:
        raise ValueError(f"window_chars must be a positive number of characters, got {window_chars!r}")
    if not isinstance(overlap_chars, int) or not 0 <= overlap_chars < window_chars:
        raise ValueError(f"overlap_chars must be 0 or more and below window_chars, got {overlap_chars!r}")
    if max_hold_ms <= 0:
        raise ValueError(f"max_hold_ms must be positive, got {max_hold_ms!r}")
    if release not in ("vetted", "optimistic"):
        raise ValueError(f"release must be 'vetted' or 'optimistic', got {release!r}")


class _Window:
    __slots__ = ("end", "start", "task", "timed")

    def __init__(self, start: int, end: int, task: asyncio.Task[Judgement], timed: bool) -> None:
        self.start = start
        self.end = end
        self.task = task
        self.timed = timed
        """Closed by `max_hold_ms`: its text is released up to its last whitespace."""


def _consume(task: asyncio.Task[Any]) -> None:
    """Mark a judgement's exception as seen when the run ended before it was collected."""
    if not task.cancelled():
        task.exception()


class _Channel:
    """One text channel's windows: its text so far, what was judged and what released."""

    __slots__ = (
        "chunks_since",
        "held_since",
        "judged_to",
        "make",
        "markers",
        "out",
        "pending_spans",
        "pieces",
        "released",
        "run_id",
        "segments",
        "total",
        "windows",
    )

    def __init__(self, make: Callable[[str, str, str], Chunk]) -> None:
        self.make = make
        self.pieces: list[str] = []
        self.total = 0
        self.judged_to = 0
        self.released = 0
        self.windows: list[_Window] = []
        self.segments: list[tuple[int, str]] = []
        """(offset where a text id starts, the id)."""
        self.markers: list[tuple[int, Chunk]] = []
        """`*-start`/`*-end` chunks held with the text, at the offset they arrived."""
        self.pending_spans: list[Span] = []
        """Spans (in channel offsets) found by a verdict and not yet released."""
        self.held_since: float | None = None
        self.chunks_since = 0
        self.run_id = ""
        self.out: list[str] = []
        """The text released so far (vetted release)."""

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


def _reasoning_delta(run_id: str, id: str, text: str) -> Chunk:
    return Chunk("reasoning-delta", run_id, TextPayload(id, text))


_CHANNELS = {"text-delta": "text", "reasoning-delta": "reasoning"}
_MARKERS = {
    "text-start": "text",
    "text-end": "text",
    "reasoning-start": "reasoning",
    "reasoning-end": "reasoning",
}


class WindowedStream:
    """The per-request windowing of one guardrail (kept in its `args.state`)."""

    def __init__(
        self,
        judge: Judge,
        *,
        window_chars: int,
        overlap_chars: int,
        max_hold_ms: float,
        release: Release,
        chunk_window: int = 0,
        processor_id: str,
        on_text_done: Callable[[str, Any], None] | None = None,
    ) -> None:
        self.judge = judge
        self.on_text_done = on_text_done
        """Called with the text released by a finished run of text (see `WindowedGuard`)."""
        self.prefetched: dict[str, asyncio.Task[Any]] = {}
        self.window_chars = window_chars
        self.overlap = overlap_chars
        self.max_hold = max_hold_ms / 1000
        self.release = release
        self.chunk_window = chunk_window
        self.processor_id = processor_id
        self.channels = {"text": _Channel(text_delta), "reasoning": _Channel(_reasoning_delta)}
        self.calls = 0

    # ------------------------------------------------------------------ stream events

    async def on_chunk(self, args: Any) -> Chunk | list[Chunk] | None:
        part: Chunk = args.part
        name = _CHANNELS.get(part.type)
        if name is not None:
            return await self._delta(args, self.channels[name], part)
        marker = _MARKERS.get(part.type)
        if marker is not None and part.type.endswith("-end"):
            channel = self.channels[marker]
            if channel.total > channel.judged_to:
                self._launch(args, channel)  # the run of text is over: judge its rest now
        if marker is not None and self.release == "vetted":
            channel = self.channels[marker]
            if channel.released < channel.total or channel.markers:
                channel.markers.append((channel.total, part))
                return None
            return part
        if marker is not None:
            return part
        out = await self.flush(args)
        out.append(part)
        return out[0] if len(out) == 1 else out

    async def _delta(self, args: Any, channel: _Channel, part: Chunk) -> Chunk | list[Chunk] | None:
        text: str = part.payload.text
        if not text:
            return part if self.release == "optimistic" or channel.released == channel.total else None
        channel.run_id = part.run_id
        if not channel.segments or channel.segments[-1][1] != part.payload.id:
            channel.segments.append((channel.total, part.payload.id))
        channel.pieces.append(text)
        channel.total += len(text)
        channel.chunks_since += 1
        if channel.held_since is None:
            channel.held_since = time.monotonic()
        unjudged = channel.total - channel.judged_to
        if unjudged >= self.window_chars or (self.chunk_window and channel.chunks_since > self.chunk_window):
            self._launch(args, channel)
        out = await self._collect(args, channel, wait=False)
        if self.release == "optimistic":
            return part
        if not out:
            return None
        return out[0] if len(out) == 1 else out

    def _launch(self, args: Any, channel: _Channel, *, timed: bool = False) -> None:
        """Start judging everything not judged yet, with the carried-over overlap before it."""
        start = max(channel.released, channel.judged_to - self.overlap, 0)
        end = channel.total
        window_text = channel.text()[start:end]
        channel.judged_to = end
        channel.held_since = None
        channel.chunks_since = 0
        self.calls += 1
        task = asyncio.ensure_future(self.judge(window_text, args))
        task.add_done_callback(_consume)
        channel.windows.append(_Window(start, end, task, timed))

    async def _collect(self, args: Any, channel: _Channel, *, wait: bool, final: bool = False) -> list[Chunk]:
        """Apply the verdicts that are in, in window order (waiting for all with `wait`)."""
        out: list[Chunk] = []
        while channel.windows and (wait or channel.windows[0].task.done()):
            window = channel.windows.pop(0)
            try:
                judgement = await window.task
            except TripWire:
                if self.release == "optimistic":
                    await self._retract(args, channel, window, "blocked")
                raise
            last = final and not channel.windows and channel.judged_to == channel.total
            out.extend(self._apply(args, channel, window, judgement, last))
            if self.release == "optimistic" and judgement.flagged and (judgement.drop or judgement.spans):
                await self._retract(args, channel, window, judgement.reason)
                args.abort(
                    f"{judgement.reason or 'Guardrail violation'} (after release; retracted)",
                    metadata={"retracted": {"start": window.start, "end": window.end}},
                )
        return out

    def _apply(
        self, args: Any, channel: _Channel, window: _Window, judgement: Judgement, last: bool
    ) -> list[Chunk]:
        if self.release == "optimistic":
            channel.released = channel.total
            return []
        release_to = window.end if last else max(channel.released, window.end - self.overlap)
        if window.timed and not last:
            # A slow stream: release what was judged up to the last whitespace, so the text
            # keeps flowing; a value still being written after it waits for the next window.
            text = channel.text()
            space = max(text.rfind(" ", release_to, window.end), text.rfind("\n", release_to, window.end))
            if space >= 0:
                release_to = space + 1
        spans = [Span(s.start + window.start, s.end + window.start, s.type) for s in judgement.spans]
        if judgement.flagged and judgement.drop:
            # The window's text is withheld; what the next window still judges starts after it.
            spans = [Span(channel.released, window.end, "dropped")]
            release_to = window.end
            channel.judged_to = max(channel.judged_to, window.end)
        pending = [s for s in channel.pending_spans if s.end > channel.released] + spans
        for span in pending:
            if span.start < release_to < span.end:
                release_to = span.end
        channel.pending_spans = [s for s in pending if s.end > release_to]
        drop = judgement.flagged and judgement.drop
        replace = judgement.replace if not drop else (lambda value, kind: "")
        return self._render(channel, release_to, pending, replace)

    def _render(
        self, channel: _Channel, release_to: int, spans: list[Span], replace: Callable[[str, str], str] | None
    ) -> list[Chunk]:
        """Chunks for the channel's text from `released` to `release_to`, with `spans`
        rewritten, interleaved with the markers held in that range."""
        start = channel.released
        if release_to <= start and not channel.markers:
            return []
        text = channel.text()
        spans = sorted(spans, key=lambda s: s.start)
        out: list[Chunk] = []
        cuts = sorted({o for o, _ in channel.markers if start < o < release_to} | {release_to})
        cursor = start
        for cut in cuts:
            for offset, marker in list(channel.markers):
                if offset <= cursor:
                    out.append(marker)
                    channel.markers.remove((offset, marker))
            if cut <= cursor:
                continue
            pieces: list[str] = []
            position = cursor
            for span in spans:
                if span.end <= position or span.start >= cut:
                    continue
                if span.start >= position:
                    pieces.append(text[position : span.start])
                    value = text[span.start : span.end]
                    pieces.append(replace(value, span.type) if replace is not None else "")
                position = min(span.end, cut)
            if position < cut:
                pieces.append(text[position:cut])
            piece = "".join(pieces)
            if piece:
                channel.out.append(piece)
                out.append(channel.make(channel.run_id, channel.id_at(cursor), piece))
            cursor = cut
        channel.released = max(release_to, channel.released)
        for offset, marker in list(channel.markers):
            if offset <= channel.released and channel.released >= channel.total:
                out.append(marker)
                channel.markers.remove((offset, marker))
        return out

    async def _retract(self, args: Any, channel: _Channel, window: _Window, reason: str) -> None:
        await args.writer.custom(
            {
                "type": RETRACTION,
                "data": {
                    "processorId": self.processor_id,
                    "channel": "text" if channel is self.channels["text"] else "reasoning",
                    "start": window.start,
                    "end": window.end,
                    "reason": reason,
                },
            }
        )

    # ------------------------------------------------------------------ flushing and deadlines

    async def flush(self, args: Any) -> list[Chunk]:
        """Judge what is left and release everything (a non-text chunk or the end is next)."""
        out: list[Chunk] = []
        for channel in self.channels.values():
            if channel.total > channel.judged_to:
                self._launch(args, channel)
            out.extend(await self._collect(args, channel, wait=True, final=True))
            if self.release == "vetted":
                if channel.released < channel.total:
                    out.extend(self._render(channel, channel.total, channel.pending_spans, None))
                out.extend(marker for _, marker in channel.markers)
            if channel is self.channels["text"] and self.on_text_done is not None and channel.total:
                released = "".join(channel.out) if self.release == "vetted" else channel.text()
                self.on_text_done(released, args)
            self._reset(channel)
        return out

    @staticmethod
    def _reset(channel: _Channel) -> None:
        channel.pieces = []
        channel.total = channel.judged_to = channel.released = 0
        channel.segments = []
        channel.markers = []
        channel.pending_spans = []
        channel.held_since = None
        channel.chunks_since = 0
        channel.out = []

    def deadline(self) -> float | None:
        earliest: float | None = None
        for channel in self.channels.values():
            if channel.windows:
                candidate = time.monotonic() + _POLL
            elif channel.held_since is not None and channel.total > channel.judged_to:
                candidate = channel.held_since + self.max_hold
            else:
                continue
            if earliest is None or candidate < earliest:
                earliest = candidate
        return earliest

    async def on_deadline(self, args: Any) -> list[Chunk]:
        out: list[Chunk] = []
        now = time.monotonic()
        for channel in self.channels.values():
            if (
                channel.held_since is not None
                and channel.total > channel.judged_to
                and now - channel.held_since >= self.max_hold
            ):
                self._launch(args, channel, timed=True)
            out.extend(await self._collect(args, channel, wait=False))
        return out


_STATE_KEY = "windowed_stream"


class WindowedGuard:
    """The stream hooks of an LLM guardrail that judges windows: mix in, call
    `init_windows(...)` in `__init__`, and implement `judge_window(text, args)`."""

    window_chars: int
    overlap_chars: int
    max_hold_ms: float
    release: Release
    chunk_window: int

    def init_windows(
        self,
        *,
        strategy: str,
        window_chars: int,
        overlap_chars: int,
        max_hold_ms: float,
        release: Release | None,
        chunk_window: int = 0,
    ) -> None:
        if release is None:
            release = "optimistic" if strategy == "warn" else "vetted"
        check_window_options(window_chars, overlap_chars, max_hold_ms, release)
        if chunk_window < 0:
            raise ValueError(f"chunk_window must be 0 or more, got {chunk_window!r}")
        self.window_chars = window_chars
        self.overlap_chars = overlap_chars
        self.max_hold_ms = max_hold_ms
        self.release = release
        self.chunk_window = chunk_window

    async def judge_window(self, text: str, args: Any) -> Judgement:
        raise NotImplementedError(f"{type(self).__name__} must implement judge_window")

    async def judge_response(self, text: str, args: Any) -> Any:
        """The verdict `process_output_result` wants on a whole response message's text."""
        raise NotImplementedError(f"{type(self).__name__} must implement judge_response")

    def _prefetch(self, text: str, args: Any) -> None:
        """A run of text is over: start the whole-response check on what was released now, so
        `process_output_result` (and the other guardrails' checks) need not wait for it."""
        stream: WindowedStream | None = args.state.get(_STATE_KEY)
        key = text.strip()
        if stream is None or not key or key in stream.prefetched:
            return
        task = asyncio.ensure_future(self.judge_response(key, args))
        task.add_done_callback(_consume)
        stream.prefetched[key] = task

    def response_detector(self, args: Any) -> Callable[[str], Awaitable[Any]]:
        """`detect(text)` for `process_output_result`: the prefetched verdict when the message
        holds exactly the text that was streamed, a fresh one otherwise."""
        stream: WindowedStream | None = args.state.get(_STATE_KEY)

        async def detect(text: str) -> Any:
            task = stream.prefetched.pop(text, None) if stream is not None else None
            if task is not None:
                return await task
            return await self.judge_response(text, args)

        return detect

    def _windows(self, args: Any) -> WindowedStream:
        stream: WindowedStream | None = args.state.get(_STATE_KEY)
        if stream is None:
            stream = args.state[_STATE_KEY] = WindowedStream(
                self.judge_window,
                window_chars=self.window_chars,
                overlap_chars=self.overlap_chars,
                max_hold_ms=self.max_hold_ms,
                release=self.release,
                chunk_window=self.chunk_window,
                processor_id=str(getattr(self, "id", type(self).__name__)),
                on_text_done=self._prefetch,
            )
        return stream

    async def process_output_stream(self, args: Any) -> Chunk | list[Chunk] | None:
        return await self._windows(args).on_chunk(args)

    async def flush_output_stream(self, args: Any) -> list[Chunk]:
        stream: WindowedStream | None = args.state.get(_STATE_KEY)
        return [] if stream is None else await stream.flush(args)

    def stream_deadline(self, state: dict[str, Any]) -> float | None:
        stream: WindowedStream | None = state.get(_STATE_KEY)
        return None if stream is None else stream.deadline()

    async def on_stream_deadline(self, args: Any) -> list[Chunk]:
        return await self._windows(args).on_deadline(args)
