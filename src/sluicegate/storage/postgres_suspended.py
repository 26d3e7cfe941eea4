"""Suspended runs in PostgreSQL: the `sluicegate_suspended_runs` table of `PostgresStore`.

Each write is one guarded statement, so it is atomic without explicit locks: a claim is an
`UPDATE ... WHERE run_id = $1 AND version = $2 AND claimed_at IS NULL AND expires_at > $3
RETURNING`, which at most one of concurrent claimers (of any process) can match, after a read
that checked the tool call against that very version. A save is an `INSERT ... ON CONFLICT DO
NOTHING` (version 1) or an `UPDATE` guarded on the claimed predecessor version and the owner.
When a guard does not match, the row is read again to say why. The contract is in
`suspended_runs`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import asyncpg

from sluicegate.storage.errors import SuspendedRunConflictError, SuspendedRunNotFoundError
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

_COLUMNS = (
    "run_id, agent_id, resource_id, thread_id, pending, snapshot, "
    "suspended_at, expires_at, claimed_at, version"
)
_SELECT = f"SELECT {_COLUMNS} FROM sluicegate_suspended_runs WHERE run_id = $1"
_CLAIM_ATTEMPTS = 16
"""Reads a claim retries when its row changed between read and update (each retry means
another claimer moved the run on, so this bound is never reached in practice)."""


def _run(row: asyncpg.Record, claimed_at: datetime | None = None) -> SuspendedRun:
    return SuspendedRun(
        run_id=row["run_id"],
        agent_id=row["agent_id"],
        resource_id=row["resource_id"],
        thread_id=row["thread_id"],
        pending=decode_pending(row["pending"]),
        snapshot=json.loads(row["snapshot"]),
        suspended_at=row["suspended_at"],
        expires_at=row["expires_at"],
        claimed_at=claimed_at or row["claimed_at"],
        version=int(row["version"]),
    )


class PostgresSuspendedRuns:
    """The `SuspendedRunStore` methods of `PostgresStore` (it provides `pool()`)."""

    pool: Callable[[], Awaitable[asyncpg.Pool]]
    max_snapshot_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES

    async def save_suspended_run(self, run: SuspendedRun) -> None:
        if not isinstance(run, SuspendedRun):
            raise TypeError(f"expected a SuspendedRun, got {type(run).__name__}")
        encoded = encode_run(run, self.max_snapshot_bytes)
        pool = await self.pool()
        if run.version == 1:
            status = await pool.execute(
                f"INSERT INTO sluicegate_suspended_runs ({_COLUMNS}) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, 1) ON CONFLICT (run_id) DO NOTHING",
                run.run_id,
                run.agent_id,
                run.resource_id,
                run.thread_id,
                encoded.pending,
                encoded.snapshot,
                run.suspended_at,
                run.expires_at,
            )
            written = status == "INSERT 0 1"
        else:
            status = await pool.execute(
                "UPDATE sluicegate_suspended_runs SET pending = $5, snapshot = $6, suspended_at = $7, "
                "expires_at = $8, claimed_at = NULL, version = $9 "
                "WHERE run_id = $1 AND version = $9 - 1 AND claimed_at IS NOT NULL AND agent_id = $2 "
                "AND resource_id IS NOT DISTINCT FROM $3 AND thread_id IS NOT DISTINCT FROM $4",
                run.run_id,
                run.agent_id,
                run.resource_id,
                run.thread_id,
                encoded.pending,
                encoded.snapshot,
                run.suspended_at,
                run.expires_at,
                run.version,
            )
            written = status == "UPDATE 1"
        if not written:
            row = await pool.fetchrow(
                "SELECT version, agent_id, resource_id, thread_id, claimed_at "
                "FROM sluicegate_suspended_runs WHERE run_id = $1",
                run.run_id,
            )
            reason = replacement_conflict(
                run,
                stored_version=int(row["version"]) if row else None,
                stored_owner=(row["agent_id"], row["resource_id"], row["thread_id"]) if row else None,
                claimed=row is not None and row["claimed_at"] is not None,
            )
            raise SuspendedRunConflictError(run.run_id, reason or "the stored run changed meanwhile")

    async def get_suspended_run(self, run_id: str, *, now: datetime | None = None) -> SuspendedRun | None:
        check_request(run_id)
        pool = await self.pool()
        row = await pool.fetchrow(_SELECT + " AND expires_at > $2", run_id, current(now))
        return _run(row) if row else None

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
        at = current(now)
        pool = await self.pool()
        for _ in range(_CLAIM_ATTEMPTS):
            row = await pool.fetchrow(_SELECT, run_id)
            if row is None or (resource_id is not None and row["resource_id"] != resource_id):
                raise SuspendedRunNotFoundError(run_id, "unknown")
            if row["expires_at"] <= at:
                raise SuspendedRunNotFoundError(run_id, "expired")
            if row["claimed_at"] is not None:
                raise SuspendedRunNotFoundError(run_id, "already claimed")
            resolve_tool_call(_run(row), tool_call_id)
            claimed = await pool.fetchval(
                "UPDATE sluicegate_suspended_runs SET claimed_at = $3 "
                "WHERE run_id = $1 AND version = $2 AND claimed_at IS NULL AND expires_at > $3 "
                "RETURNING claimed_at",
                run_id,
                row["version"],
                at,
            )
            if claimed is not None:
                return _run(row, claimed)
        raise SuspendedRunNotFoundError(run_id, "changed by other claimers meanwhile")

    async def release_suspended_run(self, run_id: str, *, version: int) -> bool:
        check_request(run_id, version=version)
        pool = await self.pool()
        status = await pool.execute(
            "UPDATE sluicegate_suspended_runs SET claimed_at = NULL "
            "WHERE run_id = $1 AND version = $2 AND claimed_at IS NOT NULL",
            run_id,
            version,
        )
        return bool(status == "UPDATE 1")

    async def finish_suspended_run(self, run_id: str, *, version: int | None = None) -> bool:
        check_request(run_id, version=version)
        pool = await self.pool()
        status = await pool.execute(
            "DELETE FROM sluicegate_suspended_runs "
            "WHERE run_id = $1 AND ($2::bigint IS NULL OR version = $2)",
            run_id,
            version,
        )
        return bool(status == "DELETE 1")

    async def list_suspended_runs(
        self,
        agent_id: str,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
        now: datetime | None = None,
    ) -> list[SuspendedRun]:
        check_owner(agent_id, thread_id=thread_id, resource_id=resource_id)
        sql = f"SELECT {_COLUMNS} FROM sluicegate_suspended_runs WHERE agent_id = $1 AND claimed_at IS NULL"
        params: list[Any] = [agent_id, current(now)]
        sql += " AND expires_at > $2"
        if thread_id is not None:
            params.append(thread_id)
            sql += f" AND thread_id = ${len(params)}"
        if resource_id is not None:
            params.append(resource_id)
            sql += f" AND resource_id = ${len(params)}"
        # Byte order for the tie-break, as SQLite and the in-memory store sort.
        sql += ' ORDER BY suspended_at DESC, run_id COLLATE "C" DESC'
        pool = await self.pool()
        return [_run(row) for row in await pool.fetch(sql, *params)]

    async def purge_expired_suspended_runs(self, *, now: datetime | None = None) -> int:
        pool = await self.pool()
        status = await pool.execute(
            "DELETE FROM sluicegate_suspended_runs WHERE expires_at <= $1", current(now)
        )
        return int(status.split()[-1])
