"""Bounding how long a processor hook may take (`processor_timeout`).

A hook that awaits something that never completes (a dead moderation endpoint, a lock that is
never released) would hang the run forever. Only awaited work can be bounded: a synchronous hook
holds the event loop until it returns, so no timer could fire anyway.

Hooks called once per step are awaited under `asyncio.timeout`. The per-chunk path must stay
cheap, so it does not wrap every call in a timer of its own (a timer per chunk per processor):
each stream processor gets one `StreamWatchdog` whose single periodic timer notices a call that
has been running too long.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sluicegate.errors import ConfigurationError, ProcessorTimeoutError

DEFAULT_PROCESSOR_TIMEOUT = 30.0
"""Seconds an awaited hook may take before the run fails with `ProcessorTimeoutError`."""

_UNSET: Any = object()


def check_timeout(name: str, value: Any) -> float | None:
    """`value` as a timeout in seconds (None disables); rejects anything else."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigurationError(f"{name} must be a positive number of seconds or None, got {value!r}")
    if value != value or value == float("inf"):
        raise ConfigurationError(f"{name} must be a finite number of seconds or None, got {value!r}")
    return float(value)


def processor_timeout(processor: Any, default: float | None) -> float | None:
    """The timeout for `processor`'s hooks: its own `timeout` attribute when it has one."""
    own = getattr(processor, "timeout", _UNSET)
    if own is _UNSET:
        return default
    return check_timeout(f"timeout of processor {getattr(processor, 'id', processor)!r}", own)


def timeout_error(pid: str, hook: str, timeout: float) -> ProcessorTimeoutError:
    return ProcessorTimeoutError(
        f"processor {pid!r} did not finish {hook} within {timeout:g} s (processor_timeout)",
        processor_id=pid,
        hook=hook,
        timeout=timeout,
    )


async def await_bounded(awaitable: Any, limit: float | None, pid: str, hook: str) -> Any:
    """Await a hook's result, failing with `ProcessorTimeoutError` after `limit` seconds."""
    if limit is None:
        return await awaitable
    scope = asyncio.timeout(limit)
    try:
        async with scope:
            return await awaitable
    except TimeoutError:
        if scope.expired():
            raise timeout_error(pid, hook, limit) from None
        raise


class StreamWatchdog:
    """Bounds one processor's awaited `process_output_stream` calls with one periodic timer.

    The per-chunk cost is a few attribute operations: each call bumps `calls` and sets `running`
    around its await, after checking `attention` (set when the timer must be armed or has fired).
    The task to interrupt is the one that armed the timer (the task reading the stream; a stream
    is read by one task at a time). The timer checks `limit / CHECKS` apart; when the same call is
    still running after `CHECKS` checks (between `limit` and 1.25 x `limit` after it started) it
    cancels the task, and the pipeline turns that cancellation into a `ProcessorTimeoutError`
    (`take_timeout`). Once the stream goes quiet the timer stops re-arming, and the next call
    arms it again.
    """

    CHECKS = 4
    __slots__ = (
        "_handle",
        "_idle",
        "_seen",
        "_strikes",
        "attention",
        "calls",
        "fired",
        "limit",
        "running",
        "task",
    )

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.calls = 0
        self.running = False
        self.task: asyncio.Task[Any] | None = None
        self.fired = False
        self._idle = True
        self.attention = True
        self._seen = -1
        self._strikes = 0
        self._handle: asyncio.TimerHandle | None = None

    def attend(self, pid: str, hook: str) -> None:
        """Before a call, when `attention` is set: arm an idle timer; fail for a timeout whose
        cancellation the previous call swallowed."""
        if self.fired:
            self.take_timeout()
            raise timeout_error(pid, hook, self.limit)
        if self._idle:
            self.task = asyncio.current_task()
            self._idle = False
            self._seen = -1
            self._strikes = 0
            self._handle = asyncio.get_running_loop().call_later(self.limit / self.CHECKS, self._check)
        self.attention = False

    def _check(self) -> None:
        if self.calls != self._seen:
            self._seen = self.calls
            self._strikes = 0
        elif not self.running:
            self._idle = self.attention = True  # a whole quiet interval: stop until the next call
            self._handle = None
            return
        else:
            self._strikes += 1
            if self._strikes >= self.CHECKS and self.task is not None and not self.task.done():
                self.fired = self.attention = True
                self.task.cancel()
                self._strikes = 0
        self._handle = asyncio.get_running_loop().call_later(self.limit / self.CHECKS, self._check)

    def take_timeout(self) -> bool:
        """After a `CancelledError` inside a watched call: whether it was this watchdog's doing
        (the cancellation is then withdrawn from the task)."""
        if not self.fired:
            return False
        self.fired = False
        self.attention = self._idle
        self.running = False
        if self.task is not None:
            self.task.uncancel()
        return True

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._idle = self.attention = True


async def call_watched(watchdog: StreamWatchdog, entry: Any, args: Any, fn: Any = None) -> Any:
    """One async stream hook call (`entry.fn`, or `fn` standing in for it) under `watchdog`: a
    call the watchdog cancelled for running past `processor_timeout` becomes
    `ProcessorTimeoutError`."""
    if watchdog.attention:
        watchdog.attend(entry.pid, entry.hook)
    watchdog.calls += 1
    watchdog.running = True
    try:
        return await (entry.fn if fn is None else fn)(args)
    except asyncio.CancelledError:
        if watchdog.take_timeout():
            raise timeout_error(entry.pid, entry.hook, entry.timeout or 0.0) from None
        raise
    finally:
        watchdog.running = False
