"""Conversation summaries in PostgreSQL: the `sluicegate_context_summaries` table of
`PostgresStore` (the contract is in `context_summaries`). Saving is one upsert: the newest
summary of a conversation replaces the one before."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from sluicegate.storage.context_summaries import ContextSummary, checked_ids, checked_summary

_COLUMNS = (
    "resource_id, thread_id, summary, covered, covered_hash, first_message_id, last_message_id, updated_at"
)
_UPSERT = (
    f"INSERT INTO sluicegate_context_summaries ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
    "ON CONFLICT (resource_id, thread_id) DO UPDATE SET summary = EXCLUDED.summary, "
    "covered = EXCLUDED.covered, covered_hash = EXCLUDED.covered_hash, "
    "first_message_id = EXCLUDED.first_message_id, last_message_id = EXCLUDED.last_message_id, "
    "updated_at = EXCLUDED.updated_at"
)
_LOAD = f"SELECT {_COLUMNS} FROM sluicegate_context_summaries WHERE resource_id = $1 AND thread_id = $2"


def _summary(row: Any) -> ContextSummary:
    return ContextSummary(
        resource_id=row["resource_id"],
        thread_id=row["thread_id"],
        summary=row["summary"],
        covered=int(row["covered"]),
        covered_hash=row["covered_hash"],
        first_message_id=row["first_message_id"],
        last_message_id=row["last_message_id"],
        updated_at=int(row["updated_at"]) / 1e6,
    )


class PostgresContextSummaries:
    """The `ContextSummaryStore` methods of `PostgresStore` (it provides `pool()`)."""

    pool: Callable[[], Awaitable[asyncpg.Pool]]

    async def load_context_summary(self, resource_id: str, thread_id: str) -> ContextSummary | None:
        key = checked_ids(resource_id, thread_id)
        pool = await self.pool()
        async with pool.acquire() as conn:
            row = await conn.fetchrow(_LOAD, *key)
        return None if row is None else _summary(row)

    async def save_context_summary(self, summary: ContextSummary) -> None:
        s = checked_summary(summary)
        pool = await self.pool()
        async with pool.acquire() as conn:
            await conn.execute(
                _UPSERT,
                s.resource_id,
                s.thread_id,
                s.summary,
                s.covered,
                s.covered_hash,
                s.first_message_id,
                s.last_message_id,
                int(time.time() * 1e6),
            )
