"""Bounding how long a processor hook may take (`processor_timeout`).

A hook that awaits something that never completes (a dead moderation endpoint, a lock that is
never released) would hang the run forever. Only awaited work can be bounded: a synchronous hook
holds the event loop until it returns, so no timer could fire anyway.

The per-chunk path must stay cheap, so it does not wrap every call in `asyncio.timeout` (a timer
per chunk per processor). Instead `run_bounded` steps the hook's coroutine once by hand: most
stream hooks finish without ever suspending, and then nothing else happens. Only a hook that
actually suspends is resumed under a timer (`_Resume` forwards what the coroutine yields to the
running task exactly as `await` would, and throws cancellation back into it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
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


class _Resume:
    """Awaitable that continues a coroutine already stepped once (`first` = what it yielded)."""

    __slots__ = ("_coro", "_first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self._coro = coro
        self._first = first

    def __await__(self) -> Generator[Any, None, Any]:
        coro = self._coro
        pending = self._first
        while True:
            try:
                yield pending
            except BaseException as exc:  # cancellation (the timer) or anything thrown in
                try:
                    pending = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    pending = coro.send(None)
                except StopIteration as stop:
                    return stop.value


async def finish_suspended(
    coro: Coroutine[Any, Any, Any], first: Any, limit: float, pid: str, hook: str
) -> Any:
    """Finish a hook's coroutine that suspended on its first step (yielding `first`), failing
    with `ProcessorTimeoutError` after `limit` seconds.

    The caller steps the coroutine once itself (`coro.send(None)`); a hook that completes on that
    step costs no timer at all."""
    try:
        return await await_bounded(_Resume(coro, first), limit, pid, hook)
    finally:
        coro.close()
