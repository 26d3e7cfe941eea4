"""The record a budget reservation returns, shared by the cost guard and the usage stores."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reservation:
    """The answer of `reserve`: `id` of the recorded estimate, or None when the spend already
    reached the limit; `spent` is the spend (open reservations included) before this one."""

    id: str | None
    spent: float
