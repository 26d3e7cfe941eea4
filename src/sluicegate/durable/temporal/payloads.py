"""What crosses the workflow boundary: plain JSON, checked against Temporal's payload limit.

Values are made JSON the way suspended runs store them (`held_step.json_value`: what cannot be
encoded becomes its text), so a durable run and a suspended one carry the same data.
"""

from __future__ import annotations

import json
from typing import Any

from sluicegate.agent.held_step import json_value
from sluicegate.durable.temporal.failures import PayloadTooLargeError

PAYLOAD_LIMIT = 2 * 1024 * 1024
"""Temporal's default limit on one payload (the server's `blobSizeLimitError`)."""

__all__ = ["PAYLOAD_LIMIT", "checked", "json_state", "json_value"]


def checked(what: str, value: Any, limit: int = PAYLOAD_LIMIT) -> Any:
    """`value` as JSON, or `PayloadTooLargeError` naming `what` when it would not fit."""
    plain = json_value(value)
    size = len(json.dumps(plain, separators=(",", ":")).encode())
    if size > limit:
        raise PayloadTooLargeError(what, size, limit)
    return plain


def json_state(state: dict[str, Any]) -> dict[str, Any]:
    """A processor's `state`, keeping the entries that survive JSON unchanged (the others
    cannot leave the process; the processor sees them missing on the other side)."""
    out: dict[str, Any] = {}
    for key, value in state.items():
        try:
            if json.loads(json.dumps(value, allow_nan=False)) == value:
                out[key] = value
        except (TypeError, ValueError):
            continue
    return out
