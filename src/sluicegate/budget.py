"""The record a budget reservation returns, shared by the cost guard and the usage stores."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Reservation:
    """The answer of `reserve`: `id` of the recorded estimate, or None when the spend already
    reached the limit; `spent` is the spend (open reservations included) before this one."""

    id: str | None
    spent: float


def checked_amounts(amount: float, limit: float) -> tuple[float, float]:
    """`amount` and `limit` as floats, refused when they would corrupt a budget: a NaN or
    negative amount stored once would hide or undo spend in every later sum of its key."""
    amount, limit = float(amount), float(limit)
    if not math.isfinite(amount) or amount < 0:
        raise ValueError(f"a reservation amount must be a finite, non-negative number, got {amount!r}")
    if math.isnan(limit):
        raise ValueError("a reservation limit must be a number, got nan")
    return amount, limit
