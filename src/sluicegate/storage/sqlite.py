"""`SQLiteStore`: memory in one SQLite file (or `":memory:"`), the default backend.

Every SQLite call runs on one dedicated worker thread per store, so the event loop never blocks
and the connection is only ever touched by that thread. The file is in WAL mode with a busy
timeout, so several stores (or processes) on the same file wait for each other instead of failing;
writes take the lock up front (`BEGIN IMMEDIATE`) so two writers cannot deadlock. The files are
watched for changes made behind the store's back (`sqlite_files`), which would otherwise lose
writes or crash the process.

SQLite is reached through `apsw`, which (unlike some builds of the standard `sqlite3`) can load
extensions; `sluicegate.vector.SQLiteVector` needs that for `sqlite-vec`, and one SQLite library
per process keeps file locking sound when both open the same file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

import apsw

from sluicegate.budget import checked_amounts, checked_idempotency_key, checked_settlement
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
from sluicegate.storage.migrations import SCHEMA_TABLE, SQLITE_MIGRATIONS, Migration, pending
from sluicegate.storage.sqlite_call_counts import SQLiteCallCounts
from sluicegate.storage.sqlite_context_summaries import SQLiteContextSummaries
from sluicegate.storage.sqlite_files import DatabaseFiles
from sluicegate.storage.sqlite_spans import SQLiteSpans
from sluicegate.storage.sqlite_suspended import SQLiteSuspendedRuns
from sluicegate.storage.sqlite_transaction import write_transaction
from sluicegate.storage.suspended_runs import DEFAULT_MAX_SNAPSHOT_BYTES, check_max_bytes
from sluicegate.storage.types import (
    MessageInclude,
    PseudonymChange,
    Resource,
    Thread,
    from_micros,
    to_micros,
    utc_now,
)

T = TypeVar("T")

_THREAD_COLUMNS = "id, resource_id, title, metadata, created_at, updated_at"
_SELECT_THREAD = f"SELECT {_THREAD_COLUMNS} FROM sluicegate_threads WHERE id = ?"
_SELECT_RESOURCE = (
    "SELECT id, working_memory, metadata, created_at, updated_at FROM sluicegate_resources WHERE id = ?"
)
_MESSAGE_COLUMNS = "id, thread_id, resource_id, role, type, content, created_at"
_BEFORE_SQL = (
    f"SELECT seq, {_MESSAGE_COLUMNS} FROM sluicegate_messages WHERE thread_id = ? "
    "AND (created_at < ? OR (created_at = ? AND seq < ?)) ORDER BY created_at DESC, seq DESC LIMIT ?"
)
_AFTER_SQL = (
    f"SELECT seq, {_MESSAGE_COLUMNS} FROM sluicegate_messages WHERE thread_id = ? "
    "AND (created_at > ? OR (created_at = ? AND seq > ?)) ORDER BY created_at, seq LIMIT ?"
)


_OWNER_SQL = "SELECT id, thread_id, resource_id FROM sluicegate_messages WHERE id IN ({})"
_THREAD_OWNER_SQL = "SELECT id, resource_id FROM sluicegate_threads WHERE id IN ({})"
_IN_CHUNK = 500


def _select_in(c: apsw.Connection, sql: str, values: Sequence[Any]) -> list[Any]:
    """Rows of `sql` whose `IN ({})` list is `values`, queried in chunks SQLite accepts."""
    rows: list[Any] = []
    for start in range(0, len(values), _IN_CHUNK):
        chunk = values[start : start + _IN_CHUNK]
        rows.extend(c.execute(sql.format(", ".join("?" * len(chunk))), tuple(chunk)).fetchall())
    return rows


_HINTS = {
    "CantOpenError": " (does the directory exist, and may this process create files in it?)",
    "ReadOnlyError": " (the file or its directory is read-only for this process)",
    "NotADBError": " (the file is not a SQLite database, or it is corrupt)",
    "CorruptError": " (the database file is corrupt)",
    "BusyError": " (another connection held the lock longer than the busy timeout)",
}


class SQLiteConnection:
    """One apsw connection owned by one worker thread; `run` executes a function there."""

    def __init__(self, path: str, *, busy_timeout_ms: int, setup: Callable[[apsw.Connection], None]) -> None:
        self.path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._setup = setup
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sluicegate-sqlite")
        self._conn: apsw.Connection | None = None
        self._closed = False
        self._on_disk = path != ":memory:" and not path.startswith("file:") and path != ""
        self._files = DatabaseFiles(path) if self._on_disk else None

    def _connection(self) -> apsw.Connection:
        if self._conn is None:
            if self._files is not None:
                self._files.before_open()
            conn = apsw.Connection(self.path)
            conn.set_busy_timeout(self._busy_timeout_ms)
            # Memory-mapped reads of the database file would crash the process on a file cut
            # under the mapping (SIGBUS); plain reads see a short file and report it instead.
            conn.execute("PRAGMA mmap_size=0")
            if self.path != ":memory:" and not self.path.startswith("file::memory:"):
                self._enable_wal(conn)
                conn.execute("PRAGMA synchronous=NORMAL")
            self._setup(conn)
            if self._files is not None:
                self._files.remember()
            self._conn = conn
        return self._conn

    def _check_files(self, conn: apsw.Connection) -> None:
        """Refuse to go on when a file of the database was deleted, replaced or cut while open
        (see `sqlite_files`): SQLite would lose writes into an unlinked file, split the WAL
        index with other processes, or crash on a cut `-shm` mapping. Closing then skips the
        checkpoint, which would read that mapping."""
        if self._files is None:
            return
        try:
            self._files.check()
        except StorageError:
            conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
            raise

    def _enable_wal(self, conn: apsw.Connection) -> None:
        """Switch to WAL. The switch needs a moment alone with the file, and SQLite reports a
        busy file here without waiting, so several stores opening one new file retry it."""
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except apsw.BusyError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    def _call(self, fn: Callable[[apsw.Connection], T]) -> T:
        try:
            conn = self._connection()
            self._check_files(conn)
            result = fn(conn)
            if self._files is not None:
                self._files.note_growth()
            return result
        except apsw.Error as exc:
            raise StorageError(
                f"SQLite database {self.path!r}: {type(exc).__name__}: {exc}"
                + _HINTS.get(type(exc).__name__, "")
            ) from exc

    async def run(self, fn: Callable[[apsw.Connection], T]) -> T:
        if self._closed:
            raise StorageError(f"the SQLite store on {self.path!r} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, fn)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def shut() -> None:
            if self._conn is not None:
                with contextlib.suppress(StorageError):
                    self._check_files(self._conn)
                self._conn.close()
                self._conn = None
                if self._files is not None:
                    self._files.forget()

        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, shut)
        self._executor.shutdown(wait=True)


def apply_migrations(conn: apsw.Connection, migrations: tuple[Migration, ...]) -> None:
    def migrate(c: apsw.Connection) -> None:
        c.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER PRIMARY KEY, "
            "description TEXT NOT NULL, applied_at INTEGER NOT NULL)"
        )
        applied = {row[0] for row in c.execute(f"SELECT version FROM {SCHEMA_TABLE}")}
        for migration in pending(migrations, applied):
            for statement in migration.statements:
                c.execute(statement)
            c.execute(
                f"INSERT INTO {SCHEMA_TABLE} (version, description, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.description, to_micros(utc_now())),
            )

    write_transaction(conn, migrate)


def fetch_one(cursor: apsw.Cursor) -> Any:
    """The first row of a query that always returns one."""
    row = cursor.fetchone()
    if row is None:
        raise StorageError("expected a row, got none")
    return row


def _thread(row: Sequence[Any]) -> Thread:
    return Thread(
        id=row[0],
        resource_id=row[1],
        title=row[2],
        metadata=json.loads(row[3]),
        created_at=from_micros(row[4]),
        updated_at=from_micros(row[5]),
    )


def _thread_params(thread: Thread) -> tuple[Any, ...]:
    """`thread` as the values of `_THREAD_COLUMNS`."""
    return (
        thread.id,
        thread.resource_id,
        thread.title,
        dumps(thread.metadata),
        to_micros(thread.created_at),
        to_micros(thread.updated_at),
    )


def _resource(row: Sequence[Any]) -> Resource:
    return Resource(
        id=row[0],
        working_memory=row[1],
        metadata=json.loads(row[2]),
        created_at=from_micros(row[3]),
        updated_at=from_micros(row[4]),
    )


def _message(row: Sequence[Any]) -> Message:
    return message_from_row(
        id=row[0],
        thread_id=row[1],
        resource_id=row[2],
        role=row[3],
        type=row[4],
        content=json.loads(row[5]),
        created_at=from_micros(row[6]),
    )


class SQLiteStore(SQLiteSuspendedRuns, SQLiteSpans, SQLiteCallCounts, SQLiteContextSummaries, MemoryStore):
    """Memory in SQLite.

    ```python
    store = SQLiteStore("memory.db")          # or SQLiteStore(":memory:")
    memory = Memory(storage=store)
    ```
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = "sluicegate.db",
        *,
        busy_timeout_ms: int = 30_000,
        max_snapshot_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES,
    ) -> None:
        self.path = os.fspath(path)
        self.max_snapshot_bytes = check_max_bytes(max_snapshot_bytes)  # suspended runs
        self._db = SQLiteConnection(
            self.path,
            busy_timeout_ms=busy_timeout_ms,
            setup=lambda conn: apply_migrations(conn, SQLITE_MIGRATIONS),
        )

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    async def schema_versions(self) -> list[int]:
        """The applied migration versions (for tests and diagnostics)."""
        return await self._db.run(
            lambda c: [row[0] for row in c.execute(f"SELECT version FROM {SCHEMA_TABLE} ORDER BY version")]
        )

    # ---------------------------------------------------------------- threads

    async def get_thread(self, thread_id: str) -> Thread | None:
        def get(c: apsw.Connection) -> Thread | None:
            row = c.execute(_SELECT_THREAD, (thread_id,)).fetchone()
            return _thread(row) if row else None

        return await self._db.run(get)

    async def create_thread(self, thread: Thread) -> Thread:
        def create(c: apsw.Connection) -> Thread:
            c.execute(
                f"INSERT INTO sluicegate_threads ({_THREAD_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                _thread_params(thread),
            )
            return _thread(fetch_one(c.execute(_SELECT_THREAD, (thread.id,))))

        return await self._db.run(lambda c: write_transaction(c, create))

    async def save_thread(self, thread: Thread) -> Thread:
        def save(c: apsw.Connection) -> None:
            c.execute(
                f"INSERT INTO sluicegate_threads ({_THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET resource_id = excluded.resource_id, "
                "title = excluded.title, metadata = excluded.metadata, created_at = excluded.created_at, "
                "updated_at = excluded.updated_at",
                _thread_params(thread),
            )

        await self._db.run(lambda c: write_transaction(c, save))
        return thread

    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Thread:
        def update(c: apsw.Connection) -> Thread:
            row = c.execute(_SELECT_THREAD, (thread_id,)).fetchone()
            if row is None:
                raise ThreadNotFoundError(thread_id)
            thread = _thread(row)
            if title is not None:
                thread.title = title
            if metadata is not None:
                thread.metadata = dict(metadata)
            thread.updated_at = max(utc_now(), thread.updated_at)
            c.execute(
                "UPDATE sluicegate_threads SET title = ?, metadata = ?, updated_at = ? WHERE id = ?",
                (thread.title, dumps(thread.metadata), to_micros(thread.updated_at), thread_id),
            )
            return thread

        return await self._db.run(lambda c: write_transaction(c, update))

    async def list_threads(self, resource_id: str) -> list[Thread]:
        return await self._db.run(
            lambda c: [
                _thread(row)
                for row in c.execute(
                    f"SELECT {_THREAD_COLUMNS} FROM sluicegate_threads "
                    "WHERE resource_id = ? ORDER BY updated_at DESC, id",
                    (resource_id,),
                )
            ]
        )

    async def delete_thread(self, thread_id: str) -> None:
        def delete(c: apsw.Connection) -> None:
            c.execute("DELETE FROM sluicegate_messages WHERE thread_id = ?", (thread_id,))
            c.execute("DELETE FROM sluicegate_pseudonyms WHERE thread_id = ?", (thread_id,))
            c.execute("DELETE FROM sluicegate_context_summaries WHERE thread_id = ?", (thread_id,))
            c.execute("DELETE FROM sluicegate_threads WHERE id = ?", (thread_id,))

        await self._db.run(lambda c: write_transaction(c, delete))

    # ---------------------------------------------------------------- messages

    async def save_messages(self, messages: Sequence[Message]) -> None:
        if not messages:
            return
        require_threads(messages)
        messages = unique_by_id(messages)
        rows = [
            (m.id, m.thread_id, m.resource_id, m.role, m.type, content_json(m), to_micros(m.created_at))
            for m in messages
        ]
        ids = [m.id for m in messages]
        thread_ids = sorted({str(m.thread_id) for m in messages})

        def save(c: apsw.Connection) -> None:
            # The write lock is held from BEGIN IMMEDIATE, so nothing changes between check and write.
            check_ownership(
                messages, _select_in(c, _OWNER_SQL, ids), _select_in(c, _THREAD_OWNER_SQL, thread_ids)
            )
            c.executemany(
                f"INSERT INTO sluicegate_messages ({_MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET "
                "role = excluded.role, type = excluded.type, content = excluded.content, "
                "created_at = excluded.created_at "
                "WHERE sluicegate_messages.thread_id = excluded.thread_id",
                rows,
            )

        await self._db.run(lambda c: write_transaction(c, save))

    async def message_owners(self, message_ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        ids = list(dict.fromkeys(message_ids))
        if not ids:
            return {}
        rows = await self._db.run(lambda c: _select_in(c, _OWNER_SQL, ids))
        return {row[0]: (row[1], row[2]) for row in rows}

    async def list_messages(self, thread_id: str, *, last: int | None = None) -> list[Message]:
        def select(c: apsw.Connection) -> list[Message]:
            if last is None:
                rows = c.execute(
                    f"SELECT {_MESSAGE_COLUMNS} FROM sluicegate_messages WHERE thread_id = ? "
                    "ORDER BY created_at, seq",
                    (thread_id,),
                ).fetchall()
                return [_message(r) for r in rows]
            if last <= 0:
                return []
            rows = c.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM sluicegate_messages WHERE thread_id = ? "
                "ORDER BY created_at DESC, seq DESC LIMIT ?",
                (thread_id, last),
            ).fetchall()
            return [_message(r) for r in reversed(rows)]

        return await self._db.run(select)

    async def list_messages_around(self, includes: Sequence[MessageInclude]) -> list[Message]:
        if not includes:
            return []

        def select(c: apsw.Connection) -> list[Message]:
            found: dict[Any, tuple[Any, Any, Message]] = {}
            for include in includes:
                anchor = c.execute(
                    "SELECT seq, thread_id, created_at FROM sluicegate_messages WHERE id = ?", (include.id,)
                ).fetchone()
                if anchor is None:
                    continue
                seq, thread_id, created_at = anchor
                query = f"SELECT seq, {_MESSAGE_COLUMNS} FROM sluicegate_messages WHERE seq = ?"
                batches = [c.execute(query, (seq,)).fetchall()]
                if include.before > 0:
                    batches.append(
                        c.execute(
                            _BEFORE_SQL,
                            (thread_id, created_at, created_at, seq, include.before),
                        ).fetchall()
                    )
                if include.after > 0:
                    batches.append(
                        c.execute(
                            _AFTER_SQL,
                            (thread_id, created_at, created_at, seq, include.after),
                        ).fetchall()
                    )
                for batch in batches:
                    for row in batch:
                        if row[0] not in found:
                            found[row[0]] = (row[7], row[0], _message(row[1:]))
            return [m for _, _, m in sorted(found.values(), key=lambda item: (item[0], item[1]))]

        return await self._db.run(select)

    async def count_messages(self, thread_id: str) -> int:
        return await self._db.run(
            lambda c: int(
                fetch_one(
                    c.execute("SELECT COUNT(*) FROM sluicegate_messages WHERE thread_id = ?", (thread_id,))
                )[0]
            )
        )

    async def delete_messages(self, message_ids: Sequence[str]) -> None:
        ids = [(i,) for i in message_ids]
        if not ids:
            return
        await self._db.run(
            lambda c: write_transaction(
                c, lambda w: w.executemany("DELETE FROM sluicegate_messages WHERE id = ?", ids)
            )
        )

    # ---------------------------------------------------------------- resources

    async def get_resource(self, resource_id: str) -> Resource | None:
        def get(c: apsw.Connection) -> Resource | None:
            row = c.execute(_SELECT_RESOURCE, (resource_id,)).fetchone()
            return _resource(row) if row is not None else None

        return await self._db.run(get)

    async def update_resource(
        self, resource_id: str, *, working_memory: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Resource:
        now = to_micros(utc_now())

        def upsert(c: apsw.Connection) -> Resource:
            c.execute(
                "INSERT INTO sluicegate_resources (id, working_memory, metadata, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "working_memory = COALESCE(excluded.working_memory, working_memory), "
                "metadata = CASE WHEN ? THEN excluded.metadata ELSE metadata END, "
                "updated_at = excluded.updated_at",
                (resource_id, working_memory, dumps(metadata or {}), now, now, metadata is not None),
            )
            return _resource(fetch_one(c.execute(_SELECT_RESOURCE, (resource_id,))))

        return await self._db.run(lambda c: write_transaction(c, upsert))

    # ---------------------------------------------------------------- usage

    async def record(self, key: str, cost: float, usage: dict[str, int], at: datetime) -> None:
        row = (key, float(cost), dumps(usage), to_micros(at))
        await self._db.run(
            lambda c: write_transaction(
                c,
                lambda w: w.execute(
                    "INSERT INTO sluicegate_usage (key, cost, usage, at) VALUES (?, ?, ?, ?)", row
                ),
            )
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
        """Record `amount` under `key` unless the spend since `since` already reached `limit`;
        check and insert share one write transaction, so concurrent reservations serialise.
        A reservation already made with `idempotency_key` is answered again, not repeated."""
        amount, limit = checked_amounts(amount, limit)
        idempotency_key = checked_idempotency_key(idempotency_key)
        since_micros = to_micros(since) if since is not None else None

        def reserve(c: apsw.Connection) -> Reservation:
            if idempotency_key is not None:
                held = c.execute(
                    "SELECT seq, spent FROM sluicegate_usage WHERE key = ? AND idempotency_key = ?",
                    (key, idempotency_key),
                ).fetchone()
                if held is not None:
                    return Reservation(str(held[0]), float(held[1] or 0.0))
            spent = float(
                fetch_one(
                    c.execute(
                        "SELECT COALESCE(SUM(cost), 0) FROM sluicegate_usage WHERE key = ? AND at >= ?",
                        (key, since_micros if since_micros is not None else -(2**62)),
                    )
                )[0]
            )
            if spent >= limit:
                return Reservation(None, spent)
            c.execute(
                "INSERT INTO sluicegate_usage (key, cost, usage, at, idempotency_key, spent) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (key, amount, dumps(usage), to_micros(at), idempotency_key, spent),
            )
            return Reservation(str(c.last_insert_rowid()), spent)

        return await self._db.run(lambda c: write_transaction(c, reserve))

    async def settle(self, key: str, reservation_id: str, cost: float, usage: dict[str, int]) -> None:
        """Replace a reservation's estimate with the real cost and usage (settling again
        writes the same values: a retried settlement charges once)."""
        row, cost = checked_settlement(reservation_id, cost)
        values = (cost, dumps(usage), row, key)
        await self._db.run(
            lambda c: write_transaction(
                c,
                lambda w: w.execute(
                    "UPDATE sluicegate_usage SET cost = ?, usage = ? WHERE seq = ? AND key = ?", values
                ),
            )
        )

    async def total(self, key: str, since: datetime | None) -> float:
        def total(c: apsw.Connection) -> float:
            if since is None:
                row = fetch_one(
                    c.execute("SELECT COALESCE(SUM(cost), 0) FROM sluicegate_usage WHERE key = ?", (key,))
                )
            else:
                row = fetch_one(
                    c.execute(
                        "SELECT COALESCE(SUM(cost), 0) FROM sluicegate_usage WHERE key = ? AND at >= ?",
                        (key, to_micros(since)),
                    )
                )
            return float(row[0])

        return await self._db.run(total)

    # ---------------------------------------------------------------- pseudonym mappings (PIIDetector)

    async def load_pseudonyms(self, resource_id: str, thread_id: str) -> tuple[bytes, int] | None:
        """The sealed pseudonym mapping of a conversation and its version, or None."""

        def load(c: apsw.Connection) -> tuple[bytes, int] | None:
            row = c.execute(
                "SELECT sealed, version FROM sluicegate_pseudonyms WHERE resource_id = ? AND thread_id = ?",
                (resource_id, thread_id),
            ).fetchone()
            return None if row is None else (bytes(row[0]), int(row[1]))

        return await self._db.run(load)

    async def save_pseudonyms(
        self, resource_id: str, thread_id: str, sealed: bytes, expected_version: int
    ) -> bool:
        """Store the mapping when its stored version is still `expected_version` (0: none
        yet), as version `expected_version + 1`; False when another writer got there first."""

        def save(c: apsw.Connection) -> bool:
            now = to_micros(utc_now())
            if expected_version == 0:
                c.execute(
                    "INSERT INTO sluicegate_pseudonyms (resource_id, thread_id, sealed, version, updated_at) "
                    "VALUES (?, ?, ?, 1, ?) ON CONFLICT (resource_id, thread_id) DO NOTHING",
                    (resource_id, thread_id, bytes(sealed), now),
                )
            else:
                c.execute(
                    "UPDATE sluicegate_pseudonyms SET sealed = ?, version = version + 1, updated_at = ? "
                    "WHERE resource_id = ? AND thread_id = ? AND version = ?",
                    (bytes(sealed), now, resource_id, thread_id, expected_version),
                )
            return bool(c.changes() == 1)

        return await self._db.run(lambda c: write_transaction(c, save))

    async def update_pseudonyms(self, resource_id: str, thread_id: str, change: PseudonymChange) -> int:
        """Replace the mapping with `change(current)` (None: keep it) while holding the write
        lock, so concurrent writers, in this process or another, apply their changes one after
        the other instead of racing; returns the version stored afterwards."""

        def update(c: apsw.Connection) -> int:
            row = c.execute(
                "SELECT sealed, version FROM sluicegate_pseudonyms WHERE resource_id = ? AND thread_id = ?",
                (resource_id, thread_id),
            ).fetchone()
            current = None if row is None else (bytes(row[0]), int(row[1]))
            sealed = change(current)
            if sealed is None:
                return 0 if current is None else current[1]
            now = to_micros(utc_now())
            if current is None:
                c.execute(
                    "INSERT INTO sluicegate_pseudonyms (resource_id, thread_id, sealed, version, updated_at) "
                    "VALUES (?, ?, ?, 1, ?)",
                    (resource_id, thread_id, bytes(sealed), now),
                )
                return 1
            c.execute(
                "UPDATE sluicegate_pseudonyms SET sealed = ?, version = ?, updated_at = ? "
                "WHERE resource_id = ? AND thread_id = ?",
                (bytes(sealed), current[1] + 1, now, resource_id, thread_id),
            )
            return current[1] + 1

        return await self._db.run(lambda c: write_transaction(c, update))

    async def close(self) -> None:
        await self._db.close()
