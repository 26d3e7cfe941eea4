"""Sharing the event loop while an evaluation runs.

An evaluation can push hundreds of thousands of chunks through processors whose hooks never
suspend (regular expressions, offline recognizers): awaited one after another, they run to the
end without the event loop getting a turn, so a server evaluating a dataset would answer no one
else, and its request timeout and disconnect checks could not fire. A `Pacer` hands the loop
`pause` seconds after each `slice` seconds of work: long enough for it to go round as often as a
waiting request needs (one bare `sleep(0)` is one round; a request needs several), short enough
to cost the evaluation little. That pause is also where a cancelled evaluation stops.
The evaluation stays on the loop that serves the application (not a thread with a loop of its
own): its processors are the application's, and a lock, client or event of theirs belongs to
that loop.
"""

from __future__ import annotations

import asyncio
import time

DEFAULT_SLICE = 0.005
"""Seconds of work between two pauses: a request waiting meanwhile waits about this long."""
DEFAULT_PAUSE = 0.001
"""Seconds the loop is left to other work at each pause."""


class Pacer:
    """`await pacer.turn()` between units of work: a pause for the loop once a slice is used up."""

    __slots__ = ("_due", "pause", "slice")

    def __init__(self, slice: float = DEFAULT_SLICE, pause: float = DEFAULT_PAUSE) -> None:
        self.slice = slice
        self.pause = pause
        self._due = time.perf_counter() + slice

    async def turn(self) -> None:
        if time.perf_counter() >= self._due:
            await asyncio.sleep(self.pause)
            self._due = time.perf_counter() + self.slice
