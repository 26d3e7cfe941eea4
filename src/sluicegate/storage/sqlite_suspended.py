"""Suspended runs in SQLite: the `sluicegate_suspended_runs` table of `SQLiteStore`.

Every write runs in one `BEGIN IMMEDIATE` transaction, which holds the database's write lock
from its first statement: a claim reads the row, checks it and marks it claimed while no other
connection (of this or any other process) can write, so exactly one of concurrent claimers wins.
The payloads are JSON text, read back exactly as written. The contract is in `suspended_runs`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

import apsw

from sluicegate.storage.errors import SuspendedRunConflictError, SuspendedRunNotFoundError
from sluicegate.storage.sqlite_transaction import StoreConnection, write_transaction
from sluicegate.storage.suspended_runs import (
    DEFAULT_MAX_SNAPSHOT_BYTES,
    SuspendedRun,
    check_owner,
    check_request,
    current,
    decode_pending,
    encode_run,
    replacement_conflict,
    resolve_tool_call,
)
from sluicegate.storage.types import from_micros, to_micros

T = TypeVar("T")


_COLUMNS = (
    "run_id, agent_id, resource_id, thread_id, pending, snapshot, "
    "suspended_at, expires_at, claimed_at, version"
)
_SELECT = f"SELECT {_COLUMNS} FROM sluicegate_suspended_runs WHERE run_id = ?"


def _run(row: Sequence[Any]) -> SuspendedRun:
    return SuspendedRun(
        run_id=row[0],
        agent_id=row[1],
        resource_id=row[2],
        thread_id=row[3],
        pending=decode_pending(row[4]),
        snapshot=json.loads(row[5]),
        suspended_at=from_micros(row[6]),
        expires_at=from_micros(row[7]),
        claimed_at=from_micros(row[8]) if row[8] is not None else None,
        version=int(row[9]),
    )


class SQLiteSuspendedRuns:
    """The `SuspendedRunStore` methods of `SQLiteStore` (it provides `_db`)."""

    _db: StoreConnection
    max_snapshot_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES

    async def save_suspended_run(self, run: SuspendedRun) -> None:
        if not isinstance(run, SuspendedRun):
            raise TypeError(f"expected a SuspendedRun, got {type(run).__name__}")
        encoded = encode_run(run, self.max_snapshot_bytes)
        values = (
            run.run_id,
            run.agent_id,
            run.resource_id,
            run.thread_id,
            encoded.pending,
            encoded.snapshot,
            to_micros(run.suspended_at),
            to_micros(run.expires_at),
            None,
            run.version,
        )

        def save(c: apsw.Connection) -> None:
            row = c.execute(
                "SELECT version, agent_id, resource_id, thread_id, claimed_at "
                "FROM sluicegate_suspended_runs WHERE run_id = ?",
                (run.run_id,),
            ).fetchone()
            reason = replacement_conflict(
                run,
                stored_version=int(row[0]) if row else None,
                stored_owner=tuple(row[1:4]) if row else None,
                claimed=row is not None and row[4] is not None,
            )
            if reason is not None:
                raise SuspendedRunConflictError(run.run_id, reason)
            c.execute(
                f"INSERT OR REPLACE INTO sluicegate_suspended_runs ({_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )

        await self._db.run(lambda c: write_transaction(c, save))

    async def get_suspended_run(self, run_id: str, *, now: datetime | None = None) -> SuspendedRun | None:
        check_request(run_id)
        at = to_micros(current(now))

        def get(c: apsw.Connection) -> SuspendedRun | None:
            row = c.execute(_SELECT + " AND expires_at > ?", (run_id, at)).fetchone()
            return _run(row) if row else None

        return await self._db.run(get)

    async def claim_suspended_run(
        self,
        run_id: str,
        tool_call_id: str | None = None,
        *,
        resource_id: str | None = None,
        now: datetime | None = None,
    ) -> SuspendedRun:
        check_request(run_id, tool_call_id)
        check_owner(resource_id=resource_id)
        when = current(now)
        at = to_micros(when)

        def claim(c: apsw.Connection) -> SuspendedRun:
            row = c.execute(_SELECT, (run_id,)).fetchone()
            if row is None or (resource_id is not None and row[2] != resource_id):
                raise SuspendedRunNotFoundError(run_id, "unknown")
            if row[7] <= at:
                raise SuspendedRunNotFoundError(run_id, "expired")
            if row[8] is not None:
                raise SuspendedRunNotFoundError(run_id, "already claimed")
            run = _run(row)
            resolve_tool_call(run, tool_call_id)
            c.execute(
                "UPDATE sluicegate_suspended_runs SET claimed_at = ? WHERE run_id = ? AND claimed_at IS NULL",
                (at, run_id),
            )
            if c.changes() != 1:  # cannot happen under the write lock; refuse rather than share
                raise SuspendedRunNotFoundError(run_id, "already claimed")
            return _run([*row[:8], at, row[9]])

        return await self._db.run(lambda c: write_transaction(c, claim))

    async def release_suspended_run(self, run_id: str, *, version: int) -> bool:
        check_request(run_id, version=version)

        def release(c: apsw.Connection) -> bool:
            c.execute(
                "UPDATE sluicegate_suspended_runs SET claimed_at = NULL "
                "WHERE run_id = ? AND version = ? AND claimed_at IS NOT NULL",
                (run_id, version),
            )
            return bool(c.changes() == 1)

        return await self._db.run(lambda c: write_transaction(c, release))

    async def finish_suspended_run(self, run_id: str, *, version: int | None = None) -> bool:
        check_request(run_id, version=version)

        def finish(c: apsw.Connection) -> bool:
            c.execute(
                "DELETE FROM sluicegate_suspended_runs WHERE run_id = ? AND (? IS NULL OR version = ?)",
                (run_id, version, version),
            )
            return bool(c.changes() == 1)

        return await self._db.run(lambda c: write_transaction(c, finish))

    async def list_suspended_runs(
        self,
        agent_id: str,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
        now: datetime | None = None,
    ) -> list[SuspendedRun]:
        check_owner(agent_id, thread_id=thread_id, resource_id=resource_id)
        sql = f"SELECT {_COLUMNS} FROM sluicegate_suspended_runs WHERE agent_id = ? AND claimed_at IS NULL"
        params: list[Any] = [agent_id]
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        if resource_id is not None:
            sql += " AND resource_id = ?"
            params.append(resource_id)
        sql += " AND expires_at > ? ORDER BY suspended_at DESC, run_id DESC"
        params.append(to_micros(current(now)))
        return await self._db.run(lambda c: [_run(row) for row in c.execute(sql, tuple(params))])

    async def purge_expired_suspended_runs(self, *, now: datetime | None = None) -> int:
        at = to_micros(current(now))

        def purge(c: apsw.Connection) -> int:
            c.execute("DELETE FROM sluicegate_suspended_runs WHERE expires_at <= ?", (at,))
            return int(c.changes())

        return await self._db.run(lambda c: write_transaction(c, purge))
