"""The record a budget reservation returns and the checks every usage store applies to the
amounts it stores, shared by the cost guard and the usage stores."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Reservation:
    """The answer of `reserve`: `id` of the recorded estimate, or None when the spend already
    reached the limit; `spent` is the spend (open reservations included) before this one."""

    id: str | None
    spent: float


MAX_IDEMPOTENCY_KEY = 256
"""Characters of a reservation's `idempotency_key` at most."""


def checked_idempotency_key(value: str | None) -> str | None:
    """A reservation's `idempotency_key`: None, or a non-empty string of at most
    `MAX_IDEMPOTENCY_KEY` characters. `reserve` called again with the key of a reservation it
    made answers that reservation instead of making another (a retried call, e.g. a durable
    run's activity whose worker died after the database commit, is charged once)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"an idempotency_key must be a string or None, got {type(value).__name__}")
    if not value or len(value) > MAX_IDEMPOTENCY_KEY:
        raise ValueError(
            f"an idempotency_key must have 1 to {MAX_IDEMPOTENCY_KEY} characters, got {len(value)}"
        )
    return value


def checked_amounts(amount: float, limit: float) -> tuple[float, float]:
    """`amount` and `limit` as floats, refused when they would corrupt a budget: a NaN or
    negative amount stored once would hide or undo spend in every later sum of its key."""
    amount, limit = _checked(amount, "a reservation amount"), float(limit)
    if math.isnan(limit):
        raise ValueError("a reservation limit must be a number, got nan")
    return amount, limit


def checked_settlement(reservation_id: str, cost: float) -> tuple[int, float]:
    """The row id and cost of a `settle`, refused like a reservation's amount: a settlement
    replaces the estimate in every later sum, so it is held to the same checks."""
    try:
        row = int(reservation_id)
    except (TypeError, ValueError):
        raise ValueError(f"a reservation id must be an integer string, got {reservation_id!r}") from None
    return row, _checked(cost, "a settled cost")


def _checked(value: float, what: str) -> float:
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{what} must be a finite, non-negative number, got {number!r}")
    return number


USAGE_SINKS_KEY = "sluicegate__usageSinks"
"""The request-context key under which a run's cost guards offer to be charged for spend made
outside their own model calls (a sub-agent's): a tuple of `UsageSink`s, copied into a
sub-agent's context, so every guard of every run above it is charged."""


@dataclass(frozen=True)
class UsageSink:
    """A cost guard of a run above, to charge with `await sink.charge(model_id, usage)`.
    Only instances count: a value a client put under the key is ignored."""

    charge: Callable[[str | None, Any], Awaitable[None]]


def usage_sinks(value: Any) -> tuple[UsageSink, ...]:
    """The `UsageSink`s under `USAGE_SINKS_KEY` (anything else there is ignored)."""
    if not isinstance(value, tuple):
        return ()
    return tuple(sink for sink in value if isinstance(sink, UsageSink))


@runtime_checkable
class OffersUsageSink(Protocol):
    """A processor that offers a `UsageSink` in its run's request context (the cost guard).
    It does so before the run's first model call, and a resumed run asks it again right after
    restoring its state: a call held for a person (a sub-agent waiting on an approval) runs
    before any model call of the resumed run, and what it spends must still be charged."""

    def offer_usage_sink(self, state: dict[str, Any], request_context: Any) -> None: ...
