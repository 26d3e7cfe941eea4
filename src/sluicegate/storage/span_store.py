"""Finished trace spans of agent runs, kept so the studio shows runs after a reload and on every
server instance that shares the storage.

The contract (`SpanStore`; `SQLiteStore` and `PostgresStore` keep it through `sqlite_spans` /
`postgres_spans`):

- `save_spans` writes a batch of `StoredSpan`s. A span is written once: saving one whose
  `(trace_id, span_id)` is stored already leaves the stored one as it was. Each trace also has a
  row (`agent_id`, `resource_id`, the earliest start) that the first span carrying them fills.
- Every stored span gets a `seq` that grows with each write, so `spans_since(seq)` reads what
  other writers stored after a point. In PostgreSQL concurrent writers can commit their seqs
  out of order: a reader asks again from a little before its last seq and drops repeats.
- `prune_spans` keeps the newest `max_traces` traces (by start) and drops those that started
  more than `max_age` ago, with all their spans.
- A span's `record` is opaque JSON made by the server (name, times, attributes, events); the
  store keeps it and never looks inside. Content is in it only when tracing captured content.

Ids are checked (32 and 16 lowercase hex digits): a bad one raises `ValueError` naming it and
nothing of the batch is written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_TRACE_MAX_AGE",
    "DEFAULT_TRACE_MAX_COUNT",
    "SpanStore",
    "StoredSpan",
    "check_bounds",
    "check_spans",
]

DEFAULT_TRACE_MAX_COUNT = 200
"""How many runs' traces are kept by default (the newest)."""
DEFAULT_TRACE_MAX_AGE = timedelta(days=7)
"""How long a run's trace is kept by default."""

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")


@dataclass(frozen=True, slots=True)
class StoredSpan:
    """One finished span as stored: its ids, start (ns since the epoch), the run it belongs to
    when the span says so, and the server's JSON `record` of it. `seq` is set by the store."""

    trace_id: str
    span_id: str
    start_ns: int
    record: dict[str, Any]
    agent_id: str | None = None
    resource_id: str | None = None
    seq: int = 0


@runtime_checkable
class SpanStore(Protocol):
    async def save_spans(self, spans: Sequence[StoredSpan]) -> None: ...

    async def spans_since(self, seq: int, limit: int = 5000) -> list[StoredSpan]:
        """Spans stored with a `seq` above `seq`, oldest first, at most `limit`."""
        ...

    async def latest_span_seq(self) -> int:
        """The highest `seq` stored (0: none)."""
        ...

    async def recent_trace_spans(self, max_traces: int) -> list[StoredSpan]:
        """All spans of the newest `max_traces` traces (by start)."""
        ...

    async def trace_spans(self, trace_id: str) -> list[StoredSpan]: ...

    async def prune_spans(self, *, max_traces: int, max_age: timedelta, now: datetime | None = None) -> int:
        """Drop traces beyond the newest `max_traces` or started before `now - max_age`; how
        many traces were dropped."""
        ...


def check_spans(spans: Sequence[StoredSpan]) -> None:
    for span in spans:
        if not isinstance(span, StoredSpan):
            raise TypeError(f"expected a StoredSpan, got {type(span).__name__}")
        if not isinstance(span.trace_id, str) or not _TRACE_ID.fullmatch(span.trace_id):
            raise ValueError(f"trace_id must be 32 lowercase hex digits, got {span.trace_id!r}")
        if not isinstance(span.span_id, str) or not _SPAN_ID.fullmatch(span.span_id):
            raise ValueError(f"span_id must be 16 lowercase hex digits, got {span.span_id!r}")
        if isinstance(span.start_ns, bool) or not isinstance(span.start_ns, int) or span.start_ns < 0:
            raise ValueError(f"start_ns must be a non-negative integer, got {span.start_ns!r}")


def check_bounds(max_traces: int, max_age: timedelta) -> None:
    if isinstance(max_traces, bool) or not isinstance(max_traces, int) or max_traces < 1:
        raise ValueError(f"max_traces must be a positive integer, got {max_traces!r}")
    if not isinstance(max_age, timedelta) or max_age <= timedelta(0):
        raise ValueError(f"max_age must be a positive timedelta, got {max_age!r}")


def check_trace_id(trace_id: str) -> str:
    if not isinstance(trace_id, str) or not _TRACE_ID.fullmatch(trace_id.lower()):
        raise ValueError(f"trace_id must be 32 hex digits, got {trace_id!r}")
    return trace_id.lower()
