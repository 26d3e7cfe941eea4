"""Call counters in SQLite: the `sluicegate_call_counts` table of `SQLiteStore` (the contract is
in `call_counts`). A reservation reads and writes its counters in one `BEGIN IMMEDIATE`
transaction, so concurrent reservations serialise on the write lock."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import apsw

from sluicegate.storage.call_counts import CallReservation, checked_key, checked_limits
from sluicegate.storage.sqlite_transaction import StoreConnection, write_transaction


def _count(c: apsw.Connection, key: str) -> int:
    row = c.execute("SELECT count FROM sluicegate_call_counts WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row is not None else 0


class SQLiteCallCounts:
    """The `CallCountStore` methods of `SQLiteStore` (it provides `_db`)."""

    _db: StoreConnection

    async def reserve_calls(self, limits: Mapping[str, int]) -> CallReservation:
        limits = checked_limits(limits)
        keys = sorted(limits)

        def reserve(c: apsw.Connection) -> CallReservation:
            current = {key: _count(c, key) for key in keys}
            for key in keys:
                if current[key] >= limits[key]:
                    return CallReservation(False, current, key)
            for key in keys:
                c.execute(
                    "INSERT INTO sluicegate_call_counts (key, count) VALUES (?, 1) "
                    "ON CONFLICT (key) DO UPDATE SET count = count + 1",
                    (key,),
                )
            return CallReservation(True, {key: current[key] + 1 for key in keys})

        return await self._db.run(lambda c: write_transaction(c, reserve))

    async def call_counts(self, keys: Sequence[str]) -> dict[str, int]:
        wanted = [checked_key(key) for key in keys]
        return await self._db.run(lambda c: {key: _count(c, key) for key in wanted})
