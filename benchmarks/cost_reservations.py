"""CostGuard reservation throughput: how many atomic budget reservations (check the spend and
record the estimate in one step) each usage store makes per second, with 50 concurrent callers
spread over 100 budget keys. Targets: >= 2,000/s on SQLite, >= 5,000/s on PostgreSQL.

Without a DSN it starts two throwaway PostgreSQL servers: one configured like the tests' (no
WAL flush: `fsync=off`, `synchronous_commit=off`) and one with PostgreSQL's durable defaults,
where every commit waits for its WAL flush, as in production. For PostgreSQL it also prints how
many transactions committed the reservations (`PostgresStore` commits concurrent reservations
in batches).

    uv run python benchmarks/cost_reservations.py      # starts throwaway PostgreSQL servers
    SLUICEGATE_BENCH_DSN=postgresql://... uv run python benchmarks/cost_reservations.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sluicegate.processors import InMemoryUsageStore
from sluicegate.storage import PostgresStore, SQLiteStore

RESERVATIONS = 10_000
CONCURRENCY = 50
KEYS = 100
POOL = 25
TESTKIT = str(Path(__file__).resolve().parent.parent / "tests" / "memory")
"""Where `memory_pg_server` (the throwaway PostgreSQL starter the tests use) lives."""


async def bench(name: str, store: Any, target: float | None) -> float:
    now = datetime.now(UTC)
    usage = {"input_tokens": 100, "output_tokens": 256, "total_tokens": 356, "reserved": 1}
    # Warm up (opens connections, applies migrations).
    await store.reserve("warm", 0.001, limit=1e9, since=None, usage=usage, at=now)
    counter = iter(range(RESERVATIONS))
    refused = 0

    async def worker() -> None:
        nonlocal refused
        for i in counter:
            held = await store.reserve(
                f"resource:u{i % KEYS}", 0.001, limit=1e9, since=None, usage=usage, at=now
            )
            if held.id is None:
                refused += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    elapsed = time.perf_counter() - start
    rate = RESERVATIONS / elapsed
    verdict = (
        ""
        if target is None
        else ("  (target >= {:,.0f}/s: {})".format(target, "met" if rate >= target else "MISSED"))
    )
    print(f"{name:<22} {rate:>9,.0f} reservations/s  ({RESERVATIONS:,} in {elapsed:.2f} s){verdict}")
    assert refused == 0
    return rate


async def round_trip_ceiling(dsn: str) -> None:
    """`SELECT 1` at the same concurrency: the most any one-round-trip reservation can reach here."""
    import asyncpg

    pool = await asyncpg.create_pool(dsn, min_size=POOL, max_size=POOL)
    counter = iter(range(RESERVATIONS))

    async def worker() -> None:
        for _ in counter:
            await pool.fetchval("SELECT 1")

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    rate = RESERVATIONS / (time.perf_counter() - start)
    await pool.close()
    print(f"{'(SELECT 1)':<22} {rate:>9,.0f} round trips/s  (one round trip per call, for scale)")


async def bench_postgres(name: str, dsn: str) -> None:
    await round_trip_ceiling(dsn)
    store = PostgresStore(dsn, max_size=POOL)
    try:
        await bench(name, store, 5_000)
        pool = await store.pool()
        commits = await pool.fetchval(
            "SELECT count(DISTINCT xmin::text) FROM sluicegate_usage WHERE key LIKE 'resource:u%'"
        )
        print(f"{'':<22} {commits:>9,} transactions committed them ({commits / RESERVATIONS:.3f} each)")
    finally:
        await store.close()


async def main() -> None:
    await bench("in-memory", InMemoryUsageStore(), None)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(os.path.join(tmp, "bench.db"))
        await bench("SQLite", store, 2_000)
        await store.close()

    dsn = os.environ.get("SLUICEGATE_BENCH_DSN")
    if dsn is not None:
        await bench_postgres("PostgreSQL", dsn)
        return
    sys.path.insert(0, TESTKIT)
    from memory_pg_server import PostgresUnavailable, start_postgres

    for name, durable in (("PostgreSQL (no flush)", False), ("PostgreSQL (durable)", True)):
        stop: Callable[[], None] | None = None
        try:
            dsn, stop = start_postgres(durable=durable)
            await bench_postgres(name, dsn)
        except PostgresUnavailable as error:
            print(f"PostgreSQL skipped: {error}")
            return
        finally:
            if stop is not None:
                stop()


if __name__ == "__main__":
    asyncio.run(main())
