"""Call counters in PostgreSQL: the `sluicegate_call_counts` table of `PostgresStore` (the
contract is in `call_counts`). A reservation is one transaction: each counter is incremented
by an upsert whose `WHERE count < limit` is checked under the row's lock, in key order (so two
reservations never wait on each other in a cycle); a refused counter rolls the others back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

import asyncpg

from sluicegate.storage.call_counts import CallReservation, checked_key, checked_limits

_INCREMENT = (
    "INSERT INTO sluicegate_call_counts AS c (key, count) VALUES ($1, 1) "
    "ON CONFLICT (key) DO UPDATE SET count = c.count + 1 WHERE c.count < $2 RETURNING count"
)
_COUNTS = "SELECT key, count FROM sluicegate_call_counts WHERE key = ANY($1::text[])"


class _Refused(Exception):
    """Rolls a reservation's transaction back: `key`'s limit refused the call."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class PostgresCallCounts:
    """The `CallCountStore` methods of `PostgresStore` (it provides `pool()`)."""

    pool: Callable[[], Awaitable[asyncpg.Pool]]

    async def reserve_calls(self, limits: Mapping[str, int]) -> CallReservation:
        limits = checked_limits(limits)
        keys = sorted(limits)
        pool = await self.pool()
        counts: dict[str, int] = {}
        try:
            async with pool.acquire() as conn, conn.transaction():
                for key in keys:
                    if limits[key] == 0:
                        raise _Refused(key)
                    count = await conn.fetchval(_INCREMENT, key, limits[key])
                    if count is None:
                        raise _Refused(key)
                    counts[key] = int(count)
        except _Refused as refused:
            return CallReservation(False, await self.call_counts(keys), refused.key)
        return CallReservation(True, counts)

    async def call_counts(self, keys: Sequence[str]) -> dict[str, int]:
        wanted = [checked_key(key) for key in keys]
        pool = await self.pool()
        async with pool.acquire() as conn:
            rows = await conn.fetch(_COUNTS, wanted)
        found = {row["key"]: int(row["count"]) for row in rows}
        return {key: found.get(key, 0) for key in wanted}
