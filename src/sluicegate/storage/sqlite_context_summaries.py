"""Conversation summaries in SQLite: the `sluicegate_context_summaries` table of `SQLiteStore`
(the contract is in `context_summaries`). Saving is one upsert: the newest summary of a
conversation replaces the one before."""

from __future__ import annotations

import time
from typing import Any

from sluicegate.storage.context_summaries import ContextSummary, checked_ids, checked_summary
from sluicegate.storage.sqlite_transaction import StoreConnection, write_transaction

_COLUMNS = (
    "resource_id, thread_id, summary, covered, covered_hash, first_message_id, last_message_id, updated_at"
)


def _summary(row: Any) -> ContextSummary:
    return ContextSummary(
        resource_id=row[0],
        thread_id=row[1],
        summary=row[2],
        covered=int(row[3]),
        covered_hash=row[4],
        first_message_id=row[5],
        last_message_id=row[6],
        updated_at=int(row[7]) / 1e6,
    )


class SQLiteContextSummaries:
    """The `ContextSummaryStore` methods of `SQLiteStore` (it provides `_db`)."""

    _db: StoreConnection

    async def load_context_summary(self, resource_id: str, thread_id: str) -> ContextSummary | None:
        key = checked_ids(resource_id, thread_id)
        row = await self._db.run(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM sluicegate_context_summaries "
                "WHERE resource_id = ? AND thread_id = ?",
                key,
            ).fetchone()
        )
        return None if row is None else _summary(row)

    async def save_context_summary(self, summary: ContextSummary) -> None:
        s = checked_summary(summary)
        row = (
            s.resource_id,
            s.thread_id,
            s.summary,
            s.covered,
            s.covered_hash,
            s.first_message_id,
            s.last_message_id,
            int(time.time() * 1e6),
        )
        await self._db.run(
            lambda c: write_transaction(
                c,
                lambda c: c.execute(
                    f"INSERT INTO sluicegate_context_summaries ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (resource_id, thread_id) DO UPDATE SET summary = excluded.summary, "
                    "covered = excluded.covered, covered_hash = excluded.covered_hash, "
                    "first_message_id = excluded.first_message_id, "
                    "last_message_id = excluded.last_message_id, updated_at = excluded.updated_at",
                    row,
                ),
            )
        )
