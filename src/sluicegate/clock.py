"""What time it is for a run: the `createdAt` of the parts and messages it makes, a step's
`started_at`, a suspension's `suspended_at`.

By default the system clock. Code that must stamp the same times again when it is replayed (a
durable run's workflow, see `sluicegate.durable.temporal.workflow`: `workflow.time_ns`, the
time of the workflow task) installs its own source for the current context with
`use_time_source`; everything started from that context (the run's tasks included) reads it,
and nothing else in the process does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar, Token
from datetime import UTC, datetime

TimeSource = Callable[[], int]
"""Nanoseconds since the epoch, as `time.time_ns` answers."""

_source: ContextVar[TimeSource | None] = ContextVar("sluicegate_time_source", default=None)


def now_ns() -> int:
    """Now, in epoch nanoseconds, from the current context's source (the system clock unless
    one was installed)."""
    source = _source.get()
    return time.time_ns() if source is None else source()


def now_ms() -> int:
    """Now, in epoch milliseconds (a part's `createdAt`, as Mastra stamps it)."""
    return now_ns() // 1_000_000


def utc_now() -> datetime:
    """Now, as an aware UTC datetime."""
    source = _source.get()
    if source is None:
        return datetime.now(UTC)
    seconds, nanos = divmod(source(), 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=nanos // 1000)


def use_time_source(source: TimeSource | None) -> Token[TimeSource | None]:
    """Make this module's clocks read `source` in the current context; `reset_time_source(token)`
    undoes it."""
    return _source.set(source)


def reset_time_source(token: Token[TimeSource | None]) -> None:
    _source.reset(token)
