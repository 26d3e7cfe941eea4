"""A panel of LLM guardrails that judges its text before the text reaches it.

Further down an output chain, past a deterministic processor (`RegexFilter`), a panel would see
text only once the panels before it released it, adding one judge latency each. Instead the
chain's first panel runs those processors ahead of time on the text it receives (see
`guardrails.shadow`) and hands this panel the result, a *view* of the text it will receive if
no judge before it changes anything: this panel judges windows of the view at once, alongside
the panels before it.

Its own input is compared with the view as it arrives. Only a verdict on a window whose text is
exactly the input (same text, same offsets) applies, and only input that equals the view and
that a verdict covered is released, so what this panel releases, blocks and redacts is what it
would have judged on its input alone. Where the input differs (a judge before it redacted or
withheld text), the view is dropped: the channel becomes the input itself, judged again from
what was released on as it arrives, as a panel alone would (about one more judge latency,
only when something was changed), until the input's last `RESYNC_CHARS` characters are found
in the view again: from there the view goes on, judged ahead of time.
"""

from __future__ import annotations

import logging
import time

from sluicegate.guardrails.lanes import CHANNELS, MARKERS, Channel, Lane, Member, value_start
from sluicegate.guardrails.windows import _POLL, WindowedStream
from sluicegate.stream.chunk import Chunk

log = logging.getLogger("sluicegate.processors.guardrails")
RESYNC_CHARS = 48
"""How much of the input must match the view again for judging ahead of time to resume."""
MAX_RESYNCS = 4
"""Resumptions per run of text at most (each divergence drops the verdicts in flight)."""


class SpeculativeStream(WindowedStream):
    """A `WindowedStream` whose lanes judge a view fed by `speculate` (by the chain's first
    panel), and whose hooks release the input that the view and the verdicts confirm."""

    # ------------------------------------------------------------------ the view

    def speculate(self, part: Chunk) -> None:
        """A chunk of the view: its text is judged now; nothing is released here (this panel's
        own hook releases it, once its input matches)."""
        if self.failure is not None:
            return
        name = CHANNELS.get(part.type)
        if name is not None:
            channel = self.channels[name]
            text: str = part.payload.text
            if not text:
                return
            channel.closed = False
            if not channel.diverged:
                self._grow(channel, text)
            elif channel.resyncs < MAX_RESYNCS:
                channel.view += text
                self._resync(channel)
            return
        marker = MARKERS.get(part.type)
        if marker is not None and part.type.endswith("-end"):
            self._judge_rest(self.channels[marker])

    def view_ended(self, *, stopped: bool = False) -> None:
        """The view is complete for now (the first panel is flushing, or with `stopped` the
        processors making it failed): judge the rest of it, and start the whole-response check
        on it alongside."""
        for channel in self.channels.values():
            if channel.diverged:
                continue
            channel.closed = True
            if not stopped:
                self._judge_rest(channel)
        if not stopped and not self.channels["text"].diverged:
            self._speculate()  # (a diverged channel holds only the input so far)

    def _judge_rest(self, channel: Channel) -> None:
        if channel.diverged:
            return
        for member, lane in zip(self.members, channel.lanes, strict=True):
            if channel.total > lane.judged_to:
                self._launch(member, channel, lane)

    # ------------------------------------------------------------------ the input

    def _arrived(self, channel: Channel) -> int:
        return channel.total if channel.diverged else channel.confirmed + len(channel.pending)

    def _bound(self, channel: Channel) -> int:
        return channel.total if channel.diverged else channel.confirmed

    def _early(self, member: Member, channel: Channel, lane: Lane) -> bool:
        """A clean verdict applies before the window's text is all confirmed: it only moves
        the lane's release point, and release stops at the confirmed input (`_cap`). A verdict
        that flags, blocks or fails waits until the input confirms all of its window."""
        task = lane.windows[0].task
        if not task.done() or task.cancelled() or task.exception() is not None:
            return False
        if task.result().flagged or lane.oversized >= 0:
            return False
        end = lane.windows[0].end
        return end - value_start(channel.text(), end, member.max_value) <= member.max_value

    def _cap(self, channel: Channel) -> int:
        """Confirmed input, cut before a value the view goes on with: the input may go on
        differently, and a value is judged whole."""
        confirmed = channel.confirmed
        if channel.diverged or confirmed >= channel.total or confirmed == 0:
            return channel.total if channel.diverged else confirmed
        text = channel.text()
        if text[confirmed].isspace() or text[confirmed - 1].isspace():
            return confirmed
        return value_start(text, confirmed, max(member.max_value for member in self.members))

    async def _delta(self, channel: Channel, part: Chunk) -> Chunk | list[Chunk] | None:
        if channel.diverged:
            out = await super()._delta(channel, part)
            if channel.resyncs < MAX_RESYNCS:
                self._resync(channel)
            return out
        text: str = part.payload.text
        if not text:
            return part if not self.vetting or channel.released == self._arrived(channel) else None
        channel.run_id = part.run_id
        arrived = self._arrived(channel)
        if not channel.segments or channel.segments[-1][1] != part.payload.id:
            channel.segments.append((arrived, part.payload.id))
        channel.pending += text
        self._confirm(channel)
        await self._collect(channel, wait=False)
        if not self.vetting:
            channel.released = self._arrived(channel)
            return part
        out = self._release(channel, self._release_point(channel))
        if not out:
            return None
        return out[0] if len(out) == 1 else out

    def _confirm(self, channel: Channel) -> None:
        """Compare the input that arrived with the view; drop the view where they differ, or
        where the input went past a view that will not grow."""
        if channel.diverged or not channel.pending:
            return
        confirmed = channel.confirmed
        size = min(len(channel.pending), channel.total - confirmed)
        if size > 0:
            if channel.pending[:size] != channel.text()[confirmed : confirmed + size]:
                self._diverge(channel)
                return
            channel.confirmed = confirmed + size
            channel.pending = channel.pending[size:]
        if channel.pending and channel.closed:
            self._diverge(channel)

    def _diverge(self, channel: Channel) -> None:
        """The input is not the view: the verdicts still to come are dropped, and everything
        not released yet is judged again on the input. (The redactions found so far stand:
        a flagging verdict applies only to a window within the confirmed input, which equals
        the view.)"""
        log.info(
            "%s: the %s it received differs from what was judged ahead of time (a guardrail "
            "before it changed it); judging it again",
            self.members[0].processor_id,
            channel.name,
        )
        view = channel.text()
        text = view[: channel.confirmed] + channel.pending
        channel.view = view
        channel.view_from = channel.confirmed
        channel.pieces = [text]
        channel.total = len(text)
        channel.pending = ""
        channel.diverged = True
        now = time.monotonic()
        for member, lane in zip(self.members, channel.lanes, strict=True):
            for window in lane.windows:
                window.task.cancel()
            lane.windows = []
            lane.vetted_to = min(lane.vetted_to, channel.released)
            lane.judged_to = lane.vetted_to
            lane.chunks_since = 0
            lane.held_since = now
            if channel.total > lane.judged_to:
                self._launch(member, channel, lane)

    def _resync(self, channel: Channel) -> None:
        """Where the input's last `RESYNC_CHARS` characters occur in the view after the point
        where they parted, the view goes on from there again: what follows is judged ahead of
        time once more (a judge before this one changed something earlier, not this)."""
        text = channel.text()
        size = len(text)
        if size - RESYNC_CHARS < channel.view_from:
            return
        found = channel.view.find(text[size - RESYNC_CHARS :], channel.view_from)
        if found < 0:
            return
        ahead = channel.view[found + RESYNC_CHARS :]
        if not ahead:
            return
        channel.diverged = False
        channel.resyncs += 1
        channel.view = ""
        channel.confirmed = size
        channel.pending = ""
        self._grow(channel, ahead)

    def _settle(self) -> None:
        """All the input of this run of text arrived: unless it is exactly the view, it is
        judged as it is."""
        for channel in self.channels.values():
            if channel.diverged:
                continue
            self._confirm(channel)
            if not channel.diverged and channel.confirmed != channel.total:
                self._diverge(channel)

    # ------------------------------------------------------------------ a silent model

    def deadline(self) -> float | None:
        """Also look again soon while input waits for the view to catch up."""
        earliest = super().deadline()
        if any(channel.pending for channel in self.channels.values()):
            candidate = self._looked + _POLL
            if earliest is None or candidate < earliest:
                earliest = candidate
        return earliest

    async def _on_deadline(self) -> list[Chunk]:
        for channel in self.channels.values():
            self._confirm(channel)
        return await super()._on_deadline()
