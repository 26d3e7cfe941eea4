"""Call counters kept across runs: how many tool or model calls a thread has made.

`CallLimit` processors reserve a call *before* it is made: `reserve_calls` checks every counter
of the call against its limit and adds one to each in a single atomic step, all or nothing, so
concurrent runs of one thread never pass the same check (no limit is exceeded by even one call).
`InMemoryCallCountStore` keeps the counters in this process; `SQLiteStore` and `PostgresStore`
keep them in their `sluicegate_call_counts` table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

MAX_COUNTER_KEY_CHARS = 1024
"""A counter key longer than this is refused (keys embed caller-supplied thread ids)."""


@dataclass(frozen=True, slots=True)
class CallReservation:
    """The answer of `reserve_calls`: `granted` (every counter was below its limit and now
    counts the call), the counters' values after it (or as they stand, when refused), and the
    first key, in sorted order, whose limit refused the call."""

    granted: bool
    counts: dict[str, int] = field(default_factory=dict)
    exceeded: str | None = None


@runtime_checkable
class CallCountStore(Protocol):
    """Where call counters live between runs."""

    async def reserve_calls(self, limits: Mapping[str, int]) -> CallReservation: ...

    async def call_counts(self, keys: Sequence[str]) -> dict[str, int]: ...


def checked_limits(limits: Mapping[str, int]) -> dict[str, int]:
    """`limits` as a plain dict, or a `TypeError`/`ValueError` naming the bad entry."""
    if not isinstance(limits, Mapping) or not limits:
        raise ValueError("reserve_calls needs a non-empty mapping of counter key to limit")
    checked: dict[str, int] = {}
    for key, limit in limits.items():
        checked_key(key)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"the limit of counter {key!r} must be an int, got {type(limit).__name__}")
        if limit < 0:
            raise ValueError(f"the limit of counter {key!r} must not be negative, got {limit}")
        checked[key] = limit
    return checked


def checked_key(key: object) -> str:
    if not isinstance(key, str) or not key:
        raise TypeError(f"a call counter key must be a non-empty string, got {key!r}")
    if len(key) > MAX_COUNTER_KEY_CHARS:
        raise ValueError(f"a call counter key is longer than {MAX_COUNTER_KEY_CHARS} characters")
    return key


class InMemoryCallCountStore:
    """A `CallCountStore` in this process's memory (lost on restart). Reserving runs without an
    `await` between the check and the count, so it is atomic on its event loop."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    async def reserve_calls(self, limits: Mapping[str, int]) -> CallReservation:
        limits = checked_limits(limits)
        keys = sorted(limits)
        current = {key: self._counts.get(key, 0) for key in keys}
        for key in keys:
            if current[key] >= limits[key]:
                return CallReservation(False, current, key)
        for key in keys:
            self._counts[key] = current[key] + 1
        return CallReservation(True, {key: current[key] + 1 for key in keys})

    async def call_counts(self, keys: Sequence[str]) -> dict[str, int]:
        return {checked_key(key): self._counts.get(key, 0) for key in keys}
