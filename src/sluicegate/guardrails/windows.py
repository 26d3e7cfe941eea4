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

Adjacent guardrails of an output chain form one panel (`windowed_guard.form_panel`, by the runner):
they all see the model's text as it comes and judge their windows at the same time, and a
channel releases text up to the lowest point every `vetted` member has vetted, with all their
redactions applied. A chain of three judges so costs about one judge latency, not three.
Panels kept apart by deterministic processors judge at once too: the first runs those
processors ahead of time (`shadow`) and the later ones judge the result before it reaches them
(`speculative`, which overrides the `_arrived`, `_bound`, `_early`, `_cap` and `_settle` hooks
here).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, NoReturn, Protocol

from sluicegate.errors import TripWire
from sluicegate.guardrails.judgement import Judgement
from sluicegate.guardrails.lanes import (
    CHANNELS,
    MARKERS,
    Channel,
    Deferred,
    Lane,
    Member,
    Redaction,
    Window,
    consume,
    reasoning_delta,
    remove,
    value_end,
    value_start,
)
from sluicegate.stream.chunk import Chunk, text_delta

RETRACTION = "data-guardrail-retraction"
OVERSIZED = "oversized-value"
"""The kind of a redaction of a value longer than `max_value_chars`."""
log = logging.getLogger("sluicegate.processors.guardrails")
_POLL = 0.005
"""Seconds between looks at running judgements while the model is quiet."""
PREFETCH_KEY = "windowed_stream_prefetched"


class Ahead(Protocol):
    """The panels down the chain that judge a panel's input ahead of time
    (`guardrails.shadow.Shadow`)."""

    async def feed(self, part: Chunk) -> None: ...

    async def end(self) -> None: ...


class WindowedStream:
    """The windowing of one request's panel of guardrails (kept in each member's `args.state`).

    A panel is one guardrail, or several adjacent ones in the output chain (see
    `sluicegate.guardrails.judge_panels`). Every member sees the text as the model wrote it and
    judges its own windows, all at once; the channel releases text up to the lowest point that
    every `vetted` member has vetted, with every member's redactions applied."""

    def __init__(self, members: list[Member]) -> None:
        self.members = members
        self.vetting = [m.position for m in members if not m.optimistic]
        """Members whose verdicts hold text back; with none, text goes out at once."""
        self.channels = {
            "text": Channel("text", text_delta, len(members)),
            "reasoning": Channel("reasoning", reasoning_delta, len(members)),
        }
        self.calls = 0
        self.failure: tuple[int, Exception] | None = None
        """A later member's failed verdict (position, error), raised by that member's hook."""
        self._speculated: str | None = None
        self.shadow: Ahead | None = None
        """The panels further down the output chain, past deterministic processors, that judge
        this panel's input ahead of time (see `guardrails.shadow`); only on a chain's first."""
        self._looked = 0.0
        """When verdicts were last looked for: at each chunk, or at a poll while the model is
        silent."""

    # ------------------------------------------------------------------ stream events

    async def on_chunk(self, args: Any) -> Chunk | list[Chunk] | None:
        part: Chunk = args.part
        self._looked = time.monotonic()
        if self.failure is not None:
            return self._stop(part.run_id)
        if self.shadow is not None and (part.type in CHANNELS or part.type in MARKERS):
            await self.shadow.feed(part)
        try:
            return await self._chunk(part)
        except Deferred:
            return self._stop(part.run_id)

    def follow(self, position: int, part: Chunk) -> Chunk:
        """A later member's stream hook: what the panel released passes (its text was judged
        by every member already), unless this member's own verdict failed."""
        failure = self.failure
        if failure is not None and failure[0] == position:
            raise failure[1]
        return part

    def _stop(self, run_id: str) -> Chunk:
        """An empty delta for the failed member's hook to raise on (nothing else is released)."""
        return text_delta(run_id, "", "")

    async def _chunk(self, part: Chunk) -> Chunk | list[Chunk] | None:
        name = CHANNELS.get(part.type)
        if name is not None:
            return await self._delta(self.channels[name], part)
        marker = MARKERS.get(part.type)
        if marker is not None:
            channel = self.channels[marker]
            if part.type.endswith("-end"):
                for member, lane in zip(self.members, channel.lanes, strict=True):
                    if channel.total > lane.judged_to:
                        self._launch(member, channel, lane)  # the run of text is over: judge its rest now
            arrived = self._arrived(channel)
            if self.vetting and (channel.released < arrived or channel.markers):
                channel.markers.append((arrived, part))
                return None
            return part
        out = await self.flush()
        out.append(part)
        return out[0] if len(out) == 1 else out

    def _arrived(self, channel: Channel) -> int:
        """How much of the channel's text this panel's own hook received."""
        return channel.total

    async def _delta(self, channel: Channel, part: Chunk) -> Chunk | list[Chunk] | None:
        text: str = part.payload.text
        if not text:
            return part if not self.vetting or channel.released == channel.total else None
        channel.run_id = part.run_id
        if not channel.segments or channel.segments[-1][1] != part.payload.id:
            channel.segments.append((channel.total, part.payload.id))
        launched = self._grow(channel, text)
        if not self.vetting:
            if launched:
                await self._collect(channel, wait=False)
            channel.released = channel.total
            return part
        if not launched:
            return None
        await self._collect(channel, wait=False)
        out = self._release(channel, self._release_point(channel))
        if not out:
            return None
        return out[0] if len(out) == 1 else out

    def _grow(self, channel: Channel, text: str) -> bool:
        """Add text to the channel and start the windows it closes; whether a verdict may be
        ready to apply."""
        channel.pieces.append(text)
        channel.total += len(text)
        launched = False
        for member, lane in zip(self.members, channel.lanes, strict=True):
            lane.chunks_since += 1
            if lane.held_since is None:
                lane.held_since = time.monotonic()
            if channel.total - lane.judged_to >= member.window_chars or (
                member.chunk_window and lane.chunks_since > member.chunk_window
            ):
                self._launch(member, channel, lane)
                launched = True
            elif lane.windows and lane.windows[0].task.done():
                launched = True
        return launched

    def _launch(self, member: Member, channel: Channel, lane: Lane, *, timed: bool = False) -> None:
        """Start judging everything the member has not judged yet, with the carried-over
        overlap before it."""
        text = channel.text()
        start = lane.judged_to - member.overlap
        if lane.judged_to:
            held = value_start(text, lane.judged_to, member.max_value)
            if lane.judged_to - held <= member.max_value:
                start = min(start, held)  # a value still growing is judged again whole
        start = max(lane.vetted_to, start, 0)
        end = channel.total
        window_text = text[start:end]
        lane.judged_to = end
        lane.held_since = None
        lane.chunks_since = 0
        self.calls += 1
        task = asyncio.ensure_future(member.judge(window_text, member.args))
        task.add_done_callback(consume)
        lane.windows.append(Window(start, end, task, timed))

    async def _collect(self, channel: Channel, *, wait: bool, final: bool = False) -> None:
        """Apply each member's verdicts that are in, in window order (waiting for all of them
        with `wait`; they were all started before, so the members are waited on together).
        A window ending past `_bound` (its text may still change) applies only if `_early`."""
        bound = self._bound(channel)
        for member, lane in zip(self.members, channel.lanes, strict=True):
            while lane.windows and (wait or lane.windows[0].task.done()):
                if lane.windows[0].end > bound and not self._early(member, channel, lane):
                    break
                window = lane.windows.pop(0)
                try:
                    judgement = await window.task
                except Exception as exc:
                    if member.optimistic and isinstance(exc, TripWire):
                        await self._retract(member, channel, window, "blocked")
                    self._fail(member, exc)
                last = final and not lane.windows and lane.judged_to == channel.total
                self._apply(member, channel, lane, window, judgement, last)
                if member.optimistic and judgement.flagged and (judgement.drop or judgement.spans):
                    await self._retract(member, channel, window, judgement.reason)
                    try:
                        member.args.abort(
                            f"{judgement.reason or 'Guardrail violation'} (after release; retracted)",
                            metadata={"retracted": {"start": window.start, "end": window.end}},
                        )
                    except Exception as exc:
                        self._fail(member, exc)

    def _early(self, member: Member, channel: Channel, lane: Lane) -> bool:
        """Whether the lane's next verdict applies before all of its window's text is final."""
        return False

    def _bound(self, channel: Channel) -> int:
        """How far the judged text is the text this panel releases (all of it, here)."""
        return channel.total

    def _fail(self, member: Member, exc: Exception) -> NoReturn:
        """Raise a member's failure from the hook that owns it: the first member's is raised
        here, a later one's by that member's own hook (so its `on_violation`, tripwire and
        error name the right processor)."""
        if member.position == 0:
            raise exc
        self.failure = (member.position, exc)
        raise Deferred from exc

    def _apply(
        self,
        member: Member,
        channel: Channel,
        lane: Lane,
        window: Window,
        judgement: Judgement,
        last: bool,
    ) -> None:
        """Move the member's release point past a judged window, keeping back the overlap the
        next window judges again, and record the redactions the verdict asked for."""
        vetted = window.end if last else max(lane.vetted_to, window.end - member.overlap)
        found: list[Redaction] = []
        if not last or lane.oversized >= 0:
            vetted, found = self._hold_value(member, channel, lane, window, vetted, last)
        if window.timed and not last:
            # A slow stream: release what was judged up to the last whitespace, so the text
            # keeps flowing; a value still being written after it waits for the next window.
            text = channel.text()
            space = max(text.rfind(" ", vetted, window.end), text.rfind("\n", vetted, window.end))
            if space >= 0:
                vetted = space + 1
        if judgement.flagged and judgement.drop:
            # The window's text is withheld; what the next window still judges starts after it.
            found.append(
                Redaction(min(lane.vetted_to, window.start), window.end, "dropped", remove, member.position)
            )
            vetted = window.end
            lane.judged_to = max(lane.judged_to, window.end)
        elif judgement.flagged and judgement.spans:
            found += [
                Redaction(
                    s.start + window.start, s.end + window.start, s.type, judgement.replace, member.position
                )
                for s in judgement.spans
            ]
        if member.optimistic:
            lane.vetted_to = max(vetted, lane.vetted_to)
            return  # a flagged window aborts the run (see `_collect`)
        pending = [r for r in lane.redactions if r.end > channel.released] + found
        for redaction in pending:
            if redaction.start < vetted < redaction.end:
                vetted = redaction.end
        lane.redactions = pending
        lane.vetted_to = max(vetted, lane.vetted_to)

    def _hold_value(
        self, member: Member, channel: Channel, lane: Lane, window: Window, vetted: int, last: bool
    ) -> tuple[int, list[Redaction]]:
        """Keep back a value still growing at the window's end (the next window judges it again
        whole, as `_launch` starts it there), so a value longer than the overlap is never
        released in part. One longer than `max_value_chars` is redacted whole instead (fail
        closed): a vetted member cannot hold it for ever, and reports it."""
        text = channel.text()
        found: list[Redaction] = []
        if 0 <= lane.oversized < window.end and lane.oversized >= window.start:
            # the rest of a value already redacted for its length, up to where it ends
            tail = value_end(text, lane.oversized, window.end)
            if tail > lane.oversized:
                found.append(Redaction(lane.oversized, tail, OVERSIZED, remove, member.position))
            lane.oversized = tail if tail == window.end else -1
            vetted = max(vetted, tail)
            if lane.oversized >= 0:
                return vetted, found  # still the same value, already reported
        if last:
            return vetted, found
        held = value_start(text, window.end, member.max_value)
        if held >= vetted:
            return vetted, found
        if window.end - held <= member.max_value:
            return min(vetted, max(held, lane.vetted_to)), found
        if member.optimistic:
            return vetted, found
        # its start, within the text not released yet (earlier windows held from there)
        begin = max(value_start(text, window.end, window.end - channel.released), channel.released)
        log.warning(
            "%s: a value of more than max_value_chars=%d characters was still being written at "
            "the end of a window; it is redacted whole",
            member.processor_id,
            member.max_value,
        )
        if member.report is not None:
            member.report(
                f"a value longer than max_value_chars={member.max_value} was redacted whole",
                {"reason": "max_value_chars", "channel": channel.name, "start": begin, "end": window.end},
            )
        found.append(Redaction(begin, window.end, OVERSIZED, remove, member.position))
        lane.oversized = window.end
        return window.end, found

    def _release_point(self, channel: Channel) -> int:
        """The lowest point every vetting member vetted, moved back before any redaction that
        straddles it (a redaction goes out whole)."""
        lanes = channel.lanes
        point = min(min(lanes[position].vetted_to for position in self.vetting), self._cap(channel))
        if point <= channel.released:
            return channel.released
        moved = True
        while moved:
            moved = False
            for position in self.vetting:
                for redaction in lanes[position].redactions:
                    if redaction.start < point < redaction.end:
                        point = redaction.start
                        moved = True
        return max(point, channel.released)

    def _cap(self, channel: Channel) -> int:
        """The furthest point the channel may be released to whatever the verdicts say."""
        return channel.total

    def _clusters(self, channel: Channel, release_to: int) -> list[tuple[int, int, str]]:
        """The redactions of every member in `[released, release_to)` as (start, end,
        replacement). Overlapping ones merge into one: the merged text is replaced once, by the
        member whose redaction covers most of it (the later one in the chain on a tie), so no
        replacement is nested in another and nothing any member flagged is released."""
        found = [
            r
            for position in self.vetting
            for r in channel.lanes[position].redactions
            if r.start < release_to and r.end > channel.released
        ]
        if not found:
            return []
        found.sort(key=lambda r: (r.start, r.end))
        text = channel.text()
        clusters: list[tuple[int, int, str]] = []
        group: list[Redaction] = []
        end = -1

        def close() -> None:
            start = group[0].start
            winner = max(group, key=lambda r: (r.end - r.start, r.member))
            value = text[start:end]
            replacement = winner.replace(value, winner.kind) if winner.replace is not None else ""
            clusters.append((start, end, replacement))

        for redaction in found:
            if group and redaction.start >= end:
                close()
                group = []
            if not group:
                end = redaction.end
            group.append(redaction)
            end = max(end, redaction.end)
        close()
        return clusters

    def _release(self, channel: Channel, release_to: int) -> list[Chunk]:
        """Chunks for the channel's text from `released` to `release_to`, redacted, interleaved
        with the markers held in that range."""
        start = channel.released
        if release_to <= start and not channel.markers:
            return []
        text = channel.text()
        clusters = self._clusters(channel, release_to) if release_to > start else []
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
            for begin, finish, replacement in clusters:
                if finish <= position or begin >= cut:
                    continue
                if begin >= position:
                    pieces.append(text[position:begin])
                    pieces.append(replacement)
                    channel.altered = True
                position = min(finish, cut)
            if position < cut:
                pieces.append(text[position:cut])
            piece = "".join(pieces)
            if piece:
                channel.out.append(piece)
                out.append(channel.make(channel.run_id, channel.id_at(cursor), piece))
            cursor = cut
        channel.released = max(release_to, channel.released)
        for position in self.vetting:
            lane = channel.lanes[position]
            if lane.redactions:
                lane.redactions = [r for r in lane.redactions if r.end > channel.released]
        arrived = self._arrived(channel)
        for offset, marker in list(channel.markers):
            if offset <= channel.released and channel.released >= arrived:
                out.append(marker)
                channel.markers.remove((offset, marker))
        return out

    async def _retract(self, member: Member, channel: Channel, window: Window, reason: str) -> None:
        await member.args.writer.custom(
            {
                "type": RETRACTION,
                "data": {
                    "processorId": member.processor_id,
                    "channel": channel.name,
                    "start": window.start,
                    "end": window.end,
                    "reason": reason,
                },
            }
        )

    # ------------------------------------------------------------------ flushing and deadlines

    async def flush(self) -> list[Chunk]:
        """Judge what is left and release everything (a non-text chunk or the end is next).
        Every member's last windows, on every channel, are started before any is waited for."""
        if self.failure is not None:
            return [self._stop(self.channels["text"].run_id)]
        try:
            return await self._flush()
        except Deferred:
            return [self._stop(self.channels["text"].run_id)]

    async def _flush(self) -> list[Chunk]:
        self._settle()
        for channel in self.channels.values():
            for member, lane in zip(self.members, channel.lanes, strict=True):
                if channel.total > lane.judged_to:
                    self._launch(member, channel, lane)
        if self.shadow is not None:
            await self.shadow.end()  # the panels down the chain start their last windows too
        self._speculate()
        out: list[Chunk] = []
        for channel in self.channels.values():
            try:
                await self._collect(channel, wait=True, final=True)
            except BaseException:
                self._text_done(None)  # the run ends here: no whole-response check is wanted
                raise
            if self.vetting:
                # Every member judged all of the text now: release the rest, redacted.
                out.extend(self._release(channel, channel.total))
                out.extend(marker for _, marker in channel.markers)
            if channel.name == "text" and channel.total:
                released = "".join(channel.out) if self.vetting else channel.text()
                self._text_done(released)
            channel.reset()
        return out

    def _settle(self) -> None:
        """All of this run of text has arrived: make the judged text the text received."""

    def _speculate(self) -> None:
        """The run of text is over and no verdict changed any of it so far: start each member's
        whole-response check on it now, alongside the last windows' verdicts, as the released
        text will most likely be exactly this text (see `WindowedGuard.response_detector`)."""
        channel = self.channels["text"]
        if not channel.total or channel.altered:
            return
        if any(channel.lanes[position].redactions for position in self.vetting):
            return
        text = channel.text()
        self._speculated = text
        for member in self.members:
            if member.on_text_done is not None:
                member.on_text_done(text, member.args)

    def _text_done(self, released: str | None) -> None:
        """Start the whole-response checks on the released text (None: the run is ending),
        cancelling a speculative one that was started on other text."""
        speculated, self._speculated = self._speculated, None
        for member in self.members:
            if member.on_text_done is None:
                continue
            if speculated is not None and (released is None or speculated.strip() != released.strip()):
                drop_prefetch(member.args.state, speculated.strip())
            if released is not None:
                member.on_text_done(released, member.args)

    def deadline(self) -> float | None:
        """When the loop should look again while the model is silent: a verdict may be in
        (`_POLL` seconds after the last look while windows are judged: a flowing stream is
        looked at with every chunk and never polled), or unjudged text waited `max_hold_ms`."""
        earliest: float | None = None
        for channel in self.channels.values():
            for member, lane in zip(self.members, channel.lanes, strict=True):
                if lane.windows:
                    candidate = self._looked + _POLL
                elif lane.held_since is not None and channel.total > lane.judged_to:
                    candidate = lane.held_since + member.max_hold
                else:
                    continue
                if earliest is None or candidate < earliest:
                    earliest = candidate
        return earliest

    async def on_deadline(self) -> list[Chunk]:
        self._looked = time.monotonic()
        if self.failure is not None:
            return [self._stop(self.channels["text"].run_id)]
        try:
            return await self._on_deadline()
        except Deferred:
            return [self._stop(self.channels["text"].run_id)]

    async def _on_deadline(self) -> list[Chunk]:
        out: list[Chunk] = []
        now = time.monotonic()
        for channel in self.channels.values():
            for member, lane in zip(self.members, channel.lanes, strict=True):
                if (
                    lane.held_since is not None
                    and channel.total > lane.judged_to
                    and now - lane.held_since >= member.max_hold
                ):
                    self._launch(member, channel, lane, timed=True)
            await self._collect(channel, wait=False)
            if self.vetting:
                out.extend(self._release(channel, self._release_point(channel)))
        return out


def drop_prefetch(state: dict[str, Any], key: str) -> None:
    """Cancel a whole-response check started on text that was not released as it was."""
    task = state.get(PREFETCH_KEY, {}).pop(key, None)
    if task is not None:
        task.cancel()
