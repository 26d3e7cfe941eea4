"""Trace spans in PostgreSQL: the `sluicegate_traces` and `sluicegate_spans` tables of
`PostgresStore`. The contract is in `span_store`; records are JSON text (TEXT, not JSONB, so
they read back as written)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta

import asyncpg

from sluicegate.storage.span_store import StoredSpan, check_bounds, check_spans, check_trace_id
from sluicegate.storage.types import utc_now

_SELECT = "SELECT trace_id, span_id, start_ns, record, agent_id, resource_id, seq FROM sluicegate_spans"


def _span(row: asyncpg.Record) -> StoredSpan:
    return StoredSpan(
        trace_id=row["trace_id"],
        span_id=row["span_id"],
        start_ns=int(row["start_ns"]),
        record=json.loads(row["record"]),
        agent_id=row["agent_id"],
        resource_id=row["resource_id"],
        seq=int(row["seq"]),
    )


class PostgresSpans:
    """The `SpanStore` methods of `PostgresStore` (it provides `pool()`)."""

    pool: Callable[[], Awaitable[asyncpg.Pool]]

    async def save_spans(self, spans: Sequence[StoredSpan]) -> None:
        check_spans(spans)
        if not spans:
            return
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction():
            # one trace row per trace, in id order (concurrent writers lock rows in one order)
            traces: dict[str, tuple[str | None, str | None, int]] = {}
            for s in spans:
                agent, resource, start = traces.get(s.trace_id, (None, None, s.start_ns))
                traces[s.trace_id] = (agent or s.agent_id, resource or s.resource_id, min(start, s.start_ns))
            await conn.executemany(
                "INSERT INTO sluicegate_traces (trace_id, agent_id, resource_id, start_ns) "
                "VALUES ($1, $2, $3, $4) ON CONFLICT (trace_id) DO UPDATE SET "
                "agent_id = COALESCE(sluicegate_traces.agent_id, EXCLUDED.agent_id), "
                "resource_id = COALESCE(sluicegate_traces.resource_id, EXCLUDED.resource_id), "
                "start_ns = LEAST(sluicegate_traces.start_ns, EXCLUDED.start_ns)",
                [(t, *traces[t]) for t in sorted(traces)],
            )
            await conn.executemany(
                "INSERT INTO sluicegate_spans (trace_id, span_id, start_ns, record, agent_id, resource_id) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (trace_id, span_id) DO NOTHING",
                [
                    (s.trace_id, s.span_id, s.start_ns, json.dumps(s.record), s.agent_id, s.resource_id)
                    for s in spans
                ],
            )

    async def spans_since(self, seq: int, limit: int = 5000) -> list[StoredSpan]:
        pool = await self.pool()
        rows = await pool.fetch(f"{_SELECT} WHERE seq > $1 ORDER BY seq LIMIT $2", seq, limit)
        return [_span(r) for r in rows]

    async def latest_span_seq(self) -> int:
        pool = await self.pool()
        return int(await pool.fetchval("SELECT COALESCE(MAX(seq), 0) FROM sluicegate_spans"))

    async def recent_trace_spans(self, max_traces: int) -> list[StoredSpan]:
        pool = await self.pool()
        rows = await pool.fetch(
            f"{_SELECT} WHERE trace_id IN (SELECT trace_id FROM sluicegate_traces "
            "ORDER BY start_ns DESC LIMIT $1) ORDER BY seq",
            max_traces,
        )
        return [_span(r) for r in rows]

    async def trace_spans(self, trace_id: str) -> list[StoredSpan]:
        key = check_trace_id(trace_id)
        pool = await self.pool()
        return [_span(r) for r in await pool.fetch(f"{_SELECT} WHERE trace_id = $1 ORDER BY seq", key)]

    async def prune_spans(self, *, max_traces: int, max_age: timedelta, now: datetime | None = None) -> int:
        check_bounds(max_traces, max_age)
        cutoff_ns = int(((now or utc_now()) - max_age).timestamp() * 1e9)
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction():
            victims = [
                row[0]
                for row in await conn.fetch(
                    "SELECT trace_id FROM sluicegate_traces WHERE start_ns < $1 OR trace_id NOT IN "
                    "(SELECT trace_id FROM sluicegate_traces ORDER BY start_ns DESC LIMIT $2)",
                    cutoff_ns,
                    max_traces,
                )
            ]
            if victims:
                await conn.execute("DELETE FROM sluicegate_spans WHERE trace_id = ANY($1::text[])", victims)
                await conn.execute("DELETE FROM sluicegate_traces WHERE trace_id = ANY($1::text[])", victims)
        return len(victims)
