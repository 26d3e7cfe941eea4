"""`PostgresStore`: memory in PostgreSQL through a pooled `asyncpg` connection.

The schema is created and migrated on first use under an advisory lock, so several processes
starting at once apply each migration exactly once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sluicegate.errors import MissingExtraError

try:
    import asyncpg
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("asyncpg", extra="postgres", feature="PostgresStore") from exc

from sluicegate.budget import checked_settlement
from sluicegate.errors import MessageOwnershipError
from sluicegate.messages.message import Message
from sluicegate.storage.base import MemoryStore, Reservation
from sluicegate.storage.codec import (
    check_ownership,
    content_json,
    dumps,
    message_from_row,
    require_threads,
    unique_by_id,
)
from sluicegate.storage.errors import StorageError, ThreadNotFoundError
from sluicegate.storage.migrations import POSTGRES_MIGRATIONS, SCHEMA_TABLE, Migration, pending
from sluicegate.storage.pg_reservations import ReservationBatcher
from sluicegate.storage.postgres_call_counts import PostgresCallCounts
from sluicegate.storage.postgres_context_summaries import PostgresContextSummaries
from sluicegate.storage.postgres_spans import PostgresSpans
from sluicegate.storage.postgres_suspended import PostgresSuspendedRuns
from sluicegate.storage.suspended_runs import DEFAULT_MAX_SNAPSHOT_BYTES, check_max_bytes
from sluicegate.storage.types import MessageInclude, PseudonymChange, Resource, Thread, utc_now

_MESSAGE_COLUMNS = "id, thread_id, resource_id, role, type, content, created_at"
_THREAD_COLUMNS = "id, resource_id, title, metadata, created_at, updated_at"
_MIGRATION_LOCK = 7_301_652_001  # one advisory-lock key shared by every sluicegate process
_USAGE_LOCK_SEED = 7_301_652_002  # seeds the per-key advisory locks of budget reservations
_PSEUDONYM_INSERT_ATTEMPTS = 3  # a first write that lost the insert race locks the winner's row


async def init_json_codecs(conn: asyncpg.Connection) -> None:
    """Read and write JSONB as Python values."""
    await conn.set_type_codec("jsonb", encoder=dumps, decoder=json.loads, schema="pg_catalog")


async def apply_migrations(conn: Any, migrations: tuple[Migration, ...]) -> None:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER PRIMARY KEY, "
            "description TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        applied = {row[0] for row in await conn.fetch(f"SELECT version FROM {SCHEMA_TABLE}")}
        for migration in pending(migrations, applied):
            for statement in migration.statements:
                await conn.execute(statement)
            await conn.execute(
                f"INSERT INTO {SCHEMA_TABLE} (version, description) VALUES ($1, $2)",
                migration.version,
                migration.description,
            )


def _required(row: asyncpg.Record | None) -> asyncpg.Record:
    if row is None:
        raise StorageError("expected a row, got none")
    return row


def _thread(row: asyncpg.Record) -> Thread:
    return Thread(
        id=row["id"],
        resource_id=row["resource_id"],
        title=row["title"],
        metadata=row["metadata"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _message(row: asyncpg.Record) -> Message:
    return message_from_row(
        id=row["id"],
        thread_id=row["thread_id"],
        resource_id=row["resource_id"],
        role=row["role"],
        type=row["type"],
        content=row["content"],
        created_at=row["created_at"],
    )


def _resource(row: asyncpg.Record) -> Resource:
    return Resource(
        id=row["id"],
        working_memory=row["working_memory"],
        metadata=row["metadata"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


class PostgresStore(
    PostgresSuspendedRuns, PostgresSpans, PostgresCallCounts, PostgresContextSummaries, MemoryStore
):
    """Memory in PostgreSQL.

    ```python
    store = PostgresStore("postgresql://user:pass@localhost:5432/app")
    memory = Memory(storage=store)
    ```
    """

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        max_snapshot_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES,
    ) -> None:
        self.dsn = dsn
        self.max_snapshot_bytes = check_max_bytes(max_snapshot_bytes)  # suspended runs
        self._min_size = min_size
        self._max_size = max_size
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()
        self._closed = False
        self._reservations = ReservationBatcher(self.pool, _USAGE_LOCK_SEED)

    def __repr__(self) -> str:
        return "PostgresStore(...)"

    async def pool(self) -> asyncpg.Pool:
        """The connection pool, opened (and the schema migrated) on first use."""
        if self._pool is not None:
            return self._pool
        if self._closed:
            raise StorageError("the PostgreSQL store is closed")
        async with self._opening:
            if self._pool is None:
                pool = await asyncpg.create_pool(
                    self.dsn, min_size=self._min_size, max_size=self._max_size, init=init_json_codecs
                )
                async with pool.acquire() as conn:
                    await apply_migrations(conn, POSTGRES_MIGRATIONS)
                self._pool = pool
        return self._pool

    async def schema_versions(self) -> list[int]:
        pool = await self.pool()
        return [row[0] for row in await pool.fetch(f"SELECT version FROM {SCHEMA_TABLE} ORDER BY version")]

    # ---------------------------------------------------------------- threads

    async def get_thread(self, thread_id: str) -> Thread | None:
        pool = await self.pool()
        row = await pool.fetchrow(
            f"SELECT {_THREAD_COLUMNS} FROM sluicegate_threads WHERE id = $1", thread_id
        )
        return _thread(row) if row else None

    async def create_thread(self, thread: Thread) -> Thread:
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                f"INSERT INTO sluicegate_threads ({_THREAD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) "
                "ON CONFLICT (id) DO NOTHING",
                thread.id,
                thread.resource_id,
                thread.title,
                thread.metadata,
                thread.created_at,
                thread.updated_at,
            )
            row = await conn.fetchrow(
                f"SELECT {_THREAD_COLUMNS} FROM sluicegate_threads WHERE id = $1", thread.id
            )
        return _thread(_required(row))

    async def save_thread(self, thread: Thread) -> Thread:
        pool = await self.pool()
        await pool.execute(
            f"INSERT INTO sluicegate_threads ({_THREAD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) "
            "ON CONFLICT (id) DO UPDATE SET resource_id = EXCLUDED.resource_id, title = EXCLUDED.title, "
            "metadata = EXCLUDED.metadata, created_at = EXCLUDED.created_at, "
            "updated_at = EXCLUDED.updated_at",
            thread.id,
            thread.resource_id,
            thread.title,
            thread.metadata,
            thread.created_at,
            thread.updated_at,
        )
        return thread

    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Thread:
        pool = await self.pool()
        row = await pool.fetchrow(
            "UPDATE sluicegate_threads SET title = COALESCE($2, title), metadata = COALESCE($3, metadata), "
            f"updated_at = GREATEST(clock_timestamp(), updated_at) WHERE id = $1 RETURNING {_THREAD_COLUMNS}",
            thread_id,
            title,
            metadata,
        )
        if row is None:
            raise ThreadNotFoundError(thread_id)
        return _thread(row)

    async def list_threads(self, resource_id: str) -> list[Thread]:
        pool = await self.pool()
        rows = await pool.fetch(
            f"SELECT {_THREAD_COLUMNS} FROM sluicegate_threads WHERE resource_id = $1 "
            "ORDER BY updated_at DESC, id",
            resource_id,
        )
        return [_thread(r) for r in rows]

    async def delete_thread(self, thread_id: str) -> None:
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("DELETE FROM sluicegate_messages WHERE thread_id = $1", thread_id)
            await conn.execute("DELETE FROM sluicegate_pseudonyms WHERE thread_id = $1", thread_id)
            await conn.execute("DELETE FROM sluicegate_context_summaries WHERE thread_id = $1", thread_id)
            await conn.execute("DELETE FROM sluicegate_threads WHERE id = $1", thread_id)

    # ---------------------------------------------------------------- messages

    async def save_messages(self, messages: Sequence[Message]) -> None:
        if not messages:
            return
        require_threads(messages)
        messages = unique_by_id(messages)
        ids = [m.id for m in messages]
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction():
            existing = await conn.fetch(
                "SELECT id, thread_id, resource_id FROM sluicegate_messages "
                "WHERE id = ANY($1::text[]) FOR UPDATE",
                ids,
            )
            owners = await conn.fetch(
                "SELECT id, resource_id FROM sluicegate_threads WHERE id = ANY($1::text[]) FOR SHARE",
                sorted({str(m.thread_id) for m in messages}),
            )
            check_ownership(messages, [tuple(r) for r in existing], [tuple(r) for r in owners])
            # One statement: an id inserted meanwhile by another thread's writer is not updated
            # (the WHERE guard) and so missing from RETURNING, which refuses the whole batch.
            written = await conn.fetch(
                f"INSERT INTO sluicegate_messages AS m ({_MESSAGE_COLUMNS}) "
                "SELECT i, t, r, ro, ty, c::jsonb, at FROM unnest("
                "$1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[]"
                ") AS x(i, t, r, ro, ty, c, at) "
                "ON CONFLICT (id) DO UPDATE SET "
                "role = EXCLUDED.role, type = EXCLUDED.type, content = EXCLUDED.content, "
                "created_at = EXCLUDED.created_at "
                "WHERE m.thread_id = EXCLUDED.thread_id RETURNING m.id",
                ids,
                [m.thread_id for m in messages],
                [m.resource_id for m in messages],
                [m.role for m in messages],
                [m.type for m in messages],
                [content_json(m) for m in messages],
                [m.created_at for m in messages],
            )
            missing = set(ids) - {row["id"] for row in written}
            if missing:
                first = next(m for m in messages if m.id in missing)
                raise MessageOwnershipError(first.id, first.thread_id)

    async def message_owners(self, message_ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        ids = list(dict.fromkeys(message_ids))
        if not ids:
            return {}
        pool = await self.pool()
        rows = await pool.fetch(
            "SELECT id, thread_id, resource_id FROM sluicegate_messages WHERE id = ANY($1::text[])", ids
        )
        return {row["id"]: (row["thread_id"], row["resource_id"]) for row in rows}

    async def list_messages(self, thread_id: str, *, last: int | None = None) -> list[Message]:
        pool = await self.pool()
        if last is None:
            rows = await pool.fetch(
                f"SELECT {_MESSAGE_COLUMNS} FROM sluicegate_messages WHERE thread_id = $1 "
                "ORDER BY created_at, seq",
                thread_id,
            )
            return [_message(r) for r in rows]
        if last <= 0:
            return []
        rows = await pool.fetch(
            f"SELECT {_MESSAGE_COLUMNS} FROM sluicegate_messages WHERE thread_id = $1 "
            "ORDER BY created_at DESC, seq DESC LIMIT $2",
            thread_id,
            last,
        )
        return [_message(r) for r in reversed(rows)]

    async def list_messages_around(self, includes: Sequence[MessageInclude]) -> list[Message]:
        if not includes:
            return []
        pool = await self.pool()
        # One statement: each anchor joined to its neighbours by their rank within the thread.
        rows = await pool.fetch(
            f"""
            WITH wanted AS (
                SELECT * FROM unnest($1::text[], $2::int[], $3::int[]) AS w(id, before, after)
            ), anchors AS (
                SELECT m.seq, m.thread_id, m.created_at, w.before, w.after
                FROM wanted w JOIN sluicegate_messages m ON m.id = w.id
            ), picked AS (
                SELECT a.seq FROM anchors a
                UNION
                SELECT p.seq FROM anchors a CROSS JOIN LATERAL (
                    SELECT seq FROM sluicegate_messages m
                    WHERE m.thread_id = a.thread_id AND (m.created_at, m.seq) < (a.created_at, a.seq)
                    ORDER BY m.created_at DESC, m.seq DESC LIMIT a.before) p
                UNION
                SELECT n.seq FROM anchors a CROSS JOIN LATERAL (
                    SELECT seq FROM sluicegate_messages m
                    WHERE m.thread_id = a.thread_id AND (m.created_at, m.seq) > (a.created_at, a.seq)
                    ORDER BY m.created_at, m.seq LIMIT a.after) n
            )
            SELECT {_MESSAGE_COLUMNS} FROM sluicegate_messages WHERE seq IN (SELECT seq FROM picked)
            ORDER BY created_at, seq
            """,
            [i.id for i in includes],
            [max(0, i.before) for i in includes],
            [max(0, i.after) for i in includes],
        )
        return [_message(r) for r in rows]

    async def count_messages(self, thread_id: str) -> int:
        pool = await self.pool()
        return int(
            await pool.fetchval("SELECT COUNT(*) FROM sluicegate_messages WHERE thread_id = $1", thread_id)
        )

    async def delete_messages(self, message_ids: Sequence[str]) -> None:
        if not message_ids:
            return
        pool = await self.pool()
        await pool.execute("DELETE FROM sluicegate_messages WHERE id = ANY($1::text[])", list(message_ids))

    # ---------------------------------------------------------------- resources

    async def get_resource(self, resource_id: str) -> Resource | None:
        pool = await self.pool()
        row = await pool.fetchrow(
            "SELECT id, working_memory, metadata, created_at, updated_at "
            "FROM sluicegate_resources WHERE id = $1",
            resource_id,
        )
        return _resource(row) if row else None

    async def update_resource(
        self, resource_id: str, *, working_memory: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Resource:
        pool = await self.pool()
        now = utc_now()
        row = await pool.fetchrow(
            "INSERT INTO sluicegate_resources AS r (id, working_memory, metadata, created_at, updated_at) "
            "VALUES ($1, $2, COALESCE($3, '{}'::jsonb), $4, $4) ON CONFLICT (id) DO UPDATE SET "
            "working_memory = COALESCE(EXCLUDED.working_memory, r.working_memory), "
            "metadata = COALESCE($3, r.metadata), updated_at = EXCLUDED.updated_at "
            "RETURNING id, working_memory, metadata, created_at, updated_at",
            resource_id,
            working_memory,
            metadata,
            now,
        )
        return _resource(_required(row))

    # ---------------------------------------------------------------- usage

    async def record(self, key: str, cost: float, usage: dict[str, int], at: datetime) -> None:
        pool = await self.pool()
        await pool.execute(
            "INSERT INTO sluicegate_usage (key, cost, usage, at) VALUES ($1, $2, $3, $4)",
            key,
            float(cost),
            usage,
            at,
        )

    async def reserve(
        self,
        key: str,
        amount: float,
        *,
        limit: float,
        since: datetime | None,
        usage: dict[str, int],
        at: datetime,
        idempotency_key: str | None = None,
    ) -> Reservation:
        """Record `amount` under `key` unless the spend since `since` already reached `limit`.

        Concurrent reservations are committed together (`ReservationBatcher`, one
        `sluicegate_reserve_many` call per batch), each still checked under its key's lock in
        arrival order and durable when this returns. A reservation whose caller is cancelled
        before its batch was sent is never written; once sent, it stands as the charge. A
        reservation already made with `idempotency_key` is answered again, not repeated."""
        return await self._reservations.reserve(
            key, amount, limit=limit, since=since, usage=usage, at=at, idempotency_key=idempotency_key
        )

    async def settle(self, key: str, reservation_id: str, cost: float, usage: dict[str, int]) -> None:
        """Replace a reservation's estimate with the real cost and usage (settling again
        writes the same values: a retried settlement charges once)."""
        row, cost = checked_settlement(reservation_id, cost)
        pool = await self.pool()
        await pool.execute(
            "UPDATE sluicegate_usage SET cost = $1, usage = $2 WHERE seq = $3 AND key = $4",
            cost,
            usage,
            row,
            key,
        )

    async def total(self, key: str, since: datetime | None) -> float:
        pool = await self.pool()
        if since is None:
            value = await pool.fetchval(
                "SELECT COALESCE(SUM(cost), 0) FROM sluicegate_usage WHERE key = $1", key
            )
        else:
            value = await pool.fetchval(
                "SELECT COALESCE(SUM(cost), 0) FROM sluicegate_usage WHERE key = $1 AND at >= $2", key, since
            )
        return float(value)

    # ---------------------------------------------------------------- pseudonym mappings (PIIDetector)

    async def load_pseudonyms(self, resource_id: str, thread_id: str) -> tuple[bytes, int] | None:
        """The sealed pseudonym mapping of a conversation and its version, or None."""
        pool = await self.pool()
        row = await pool.fetchrow(
            "SELECT sealed, version FROM sluicegate_pseudonyms WHERE resource_id = $1 AND thread_id = $2",
            resource_id,
            thread_id,
        )
        return None if row is None else (bytes(row["sealed"]), int(row["version"]))

    async def save_pseudonyms(
        self, resource_id: str, thread_id: str, sealed: bytes, expected_version: int
    ) -> bool:
        """Store the mapping when its stored version is still `expected_version` (0: none
        yet), as version `expected_version + 1`; False when another writer got there first."""
        pool = await self.pool()
        if expected_version == 0:
            status = await pool.execute(
                "INSERT INTO sluicegate_pseudonyms (resource_id, thread_id, sealed, version, updated_at) "
                "VALUES ($1, $2, $3, 1, now()) ON CONFLICT (resource_id, thread_id) DO NOTHING",
                resource_id,
                thread_id,
                bytes(sealed),
            )
            return bool(status == "INSERT 0 1")
        status = await pool.execute(
            "UPDATE sluicegate_pseudonyms SET sealed = $3, version = version + 1, updated_at = now() "
            "WHERE resource_id = $1 AND thread_id = $2 AND version = $4",
            resource_id,
            thread_id,
            bytes(sealed),
            expected_version,
        )
        return bool(status == "UPDATE 1")

    async def update_pseudonyms(self, resource_id: str, thread_id: str, change: PseudonymChange) -> int:
        """Replace the mapping with `change(current)` (None: keep it) while holding its row
        lock (`SELECT ... FOR UPDATE`), so concurrent writers in any process apply their changes
        one after the other instead of racing; returns the version stored afterwards."""
        pool = await self.pool()
        try:
            async with pool.acquire() as conn, conn.transaction(isolation="read_committed"):
                for _ in range(_PSEUDONYM_INSERT_ATTEMPTS):
                    row = await conn.fetchrow(
                        "SELECT sealed, version FROM sluicegate_pseudonyms "
                        "WHERE resource_id = $1 AND thread_id = $2 FOR UPDATE",
                        resource_id,
                        thread_id,
                    )
                    current = None if row is None else (bytes(row["sealed"]), int(row["version"]))
                    sealed = change(current)
                    if sealed is None:
                        return 0 if current is None else current[1]
                    if current is not None:
                        await conn.execute(
                            "UPDATE sluicegate_pseudonyms SET sealed = $3, version = $4, updated_at = now() "
                            "WHERE resource_id = $1 AND thread_id = $2",
                            resource_id,
                            thread_id,
                            bytes(sealed),
                            current[1] + 1,
                        )
                        return current[1] + 1
                    status = await conn.execute(
                        "INSERT INTO sluicegate_pseudonyms "
                        "(resource_id, thread_id, sealed, version, updated_at) VALUES ($1, $2, $3, 1, now()) "
                        "ON CONFLICT (resource_id, thread_id) DO NOTHING",
                        resource_id,
                        thread_id,
                        bytes(sealed),
                    )
                    if status == "INSERT 0 1":
                        return 1
                    # Another writer created the row meanwhile (and committed: the insert waited
                    # for it). Each statement sees the latest commit, so lock that row and merge.
        except asyncpg.PostgresError as exc:
            raise StorageError(
                f"PostgreSQL: the pseudonym mapping of thread {thread_id!r} could not be written: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        raise StorageError(
            f"PostgreSQL: the pseudonym mapping of thread {thread_id!r} was created and deleted "
            f"{_PSEUDONYM_INSERT_ATTEMPTS} times while being written; nothing was written"
        )

    async def close(self) -> None:
        await self._reservations.close()
        self._closed = True
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()
