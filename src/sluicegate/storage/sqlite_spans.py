"""Trace spans in SQLite: the `sluicegate_traces` and `sluicegate_spans` tables of
`SQLiteStore`. The contract is in `span_store`; records are JSON text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

import apsw

from sluicegate.storage.span_store import StoredSpan, check_bounds, check_spans, check_trace_id
from sluicegate.storage.sqlite_transaction import StoreConnection, write_transaction
from sluicegate.storage.types import utc_now

T = TypeVar("T")


_SELECT = "SELECT trace_id, span_id, start_ns, record, agent_id, resource_id, seq FROM sluicegate_spans"


def _span(row: Sequence[Any]) -> StoredSpan:
    return StoredSpan(
        trace_id=row[0],
        span_id=row[1],
        start_ns=int(row[2]),
        record=json.loads(row[3]),
        agent_id=row[4],
        resource_id=row[5],
        seq=int(row[6]),
    )


def _row(span: StoredSpan) -> tuple[Any, ...]:
    record = json.dumps(span.record)
    return (span.trace_id, span.span_id, span.start_ns, record, span.agent_id, span.resource_id)


class SQLiteSpans:
    """The `SpanStore` methods of `SQLiteStore` (it provides `_db`)."""

    _db: StoreConnection

    async def save_spans(self, spans: Sequence[StoredSpan]) -> None:
        check_spans(spans)
        rows = [_row(span) for span in spans]

        def save(c: apsw.Connection) -> None:
            for row in rows:
                c.execute(
                    "INSERT INTO sluicegate_traces (trace_id, agent_id, resource_id, start_ns) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (trace_id) DO UPDATE SET "
                    "agent_id = COALESCE(sluicegate_traces.agent_id, excluded.agent_id), "
                    "resource_id = COALESCE(sluicegate_traces.resource_id, excluded.resource_id), "
                    "start_ns = MIN(sluicegate_traces.start_ns, excluded.start_ns)",
                    (row[0], row[4], row[5], row[2]),
                )
                c.execute(
                    "INSERT OR IGNORE INTO sluicegate_spans "
                    "(trace_id, span_id, start_ns, record, agent_id, resource_id) VALUES (?, ?, ?, ?, ?, ?)",
                    row,
                )

        if rows:
            await self._db.run(lambda c: write_transaction(c, save))

    async def spans_since(self, seq: int, limit: int = 5000) -> list[StoredSpan]:
        query = f"{_SELECT} WHERE seq > ? ORDER BY seq LIMIT ?"
        return await self._db.run(lambda c: [_span(r) for r in c.execute(query, (seq, limit))])

    async def latest_span_seq(self) -> int:
        def latest(c: apsw.Connection) -> int:
            row = c.execute("SELECT COALESCE(MAX(seq), 0) FROM sluicegate_spans").fetchone()
            return int(row[0]) if row else 0

        return await self._db.run(latest)

    async def recent_trace_spans(self, max_traces: int) -> list[StoredSpan]:
        return await self._db.run(
            lambda c: [
                _span(r)
                for r in c.execute(
                    f"{_SELECT} WHERE trace_id IN (SELECT trace_id FROM sluicegate_traces "
                    "ORDER BY start_ns DESC LIMIT ?) ORDER BY seq",
                    (max_traces,),
                )
            ]
        )

    async def trace_spans(self, trace_id: str) -> list[StoredSpan]:
        key = check_trace_id(trace_id)
        return await self._db.run(
            lambda c: [_span(r) for r in c.execute(f"{_SELECT} WHERE trace_id = ? ORDER BY seq", (key,))]
        )

    async def prune_spans(self, *, max_traces: int, max_age: timedelta, now: datetime | None = None) -> int:
        check_bounds(max_traces, max_age)
        cutoff_ns = int(((now or utc_now()) - max_age).timestamp() * 1e9)

        def prune(c: apsw.Connection) -> int:
            victims = [
                row[0]
                for row in c.execute(
                    "SELECT trace_id FROM sluicegate_traces WHERE start_ns < ? OR trace_id NOT IN "
                    "(SELECT trace_id FROM sluicegate_traces ORDER BY start_ns DESC LIMIT ?)",
                    (cutoff_ns, max_traces),
                )
            ]
            for trace_id in victims:
                c.execute("DELETE FROM sluicegate_spans WHERE trace_id = ?", (trace_id,))
                c.execute("DELETE FROM sluicegate_traces WHERE trace_id = ?", (trace_id,))
            return len(victims)

        return await self._db.run(lambda c: write_transaction(c, prune))
