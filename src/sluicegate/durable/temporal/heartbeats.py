"""Heartbeats of the durable run's activities: enough for Temporal to notice a dead worker within
the heartbeat timeout, and no more.

Each heartbeat the worker sends is a call to the server that updates the activity's state, and
the first one of an activity goes out at once (later ones are throttled by the SDK). Most
model and tool calls end well within the heartbeat timeout; a heartbeat at their start would
only cost the server a write per activity. So an activity beats first one interval (a third of
the heartbeat timeout) after it started, then at most once per interval: the server still
hears from a live worker before the timeout, which it counts from the activity's start.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from temporalio import activity

DEFAULT_INTERVAL = 1.0
"""Seconds between beats of an activity scheduled without a heartbeat timeout."""


def interval() -> float:
    """Seconds between the current activity's beats: a third of its heartbeat timeout."""
    timeout = activity.info().heartbeat_timeout
    return timeout.total_seconds() / 3 if timeout else DEFAULT_INTERVAL


class Pacer:
    """Beats for a stream that makes progress: `beat()` on each part sends a heartbeat only once
    an interval has passed since the last one (or the activity's start). A stream that stalls
    sends none, so its silence times it out as before. Cheap per part: one clock read."""

    __slots__ = ("_clock", "_due", "_interval")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._interval = interval()
        self._due = clock() + self._interval

    def beat(self) -> None:
        now = self._clock()
        if now >= self._due:
            activity.heartbeat()
            self._due = now + self._interval


class Beating:
    """Heartbeat while the body runs (a tool, a judge call: they do not beat themselves), so a
    dead worker is noticed within the heartbeat timeout however long the call takes. A timer on
    the event loop, not a task: a call that ends within an interval (most) costs one timer
    handle, set and cancelled, and no task switch. The timer runs in a copy of the activity's
    context, where `activity.heartbeat` finds its activity."""

    __slots__ = ("_every", "_handle", "_loop")

    def __enter__(self) -> None:
        self._every = interval()
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_later(self._every, self._beat)

    def _beat(self) -> None:
        activity.heartbeat()
        self._handle = self._loop.call_later(self._every, self._beat)

    def __exit__(self, *exc_info: object) -> None:
        self._handle.cancel()


def beating() -> Beating:
    """`with beating(): ...` heartbeats while its body runs (see `Beating`)."""
    return Beating()
