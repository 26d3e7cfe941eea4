"""Call-counter reservation throughput (`ToolCallLimit` / `ModelCallLimit` with
`scope="thread"`): how many atomic reservations (check every counter of a call against its
limit and count it, all or nothing) each store makes per second, with 50 concurrent callers,
each call counting two counters (`"*"` and a tool). `one thread`: every caller on the same
thread, so all contend for one row (the worst case); `100 threads`: spread over 100 threads.

    uv run python benchmarks/call_counts.py      # starts a throwaway PostgreSQL server
    SLUICEGATE_BENCH_DSN=postgresql://... uv run python benchmarks/call_counts.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sluicegate.storage import InMemoryCallCountStore, PostgresStore, SQLiteStore

RESERVATIONS = 4_000
CONCURRENCY = 50
TESTKIT = str(Path(__file__).resolve().parent.parent / "tests" / "memory")
"""Where `memory_pg_server` (the throwaway PostgreSQL starter the tests use) lives."""


async def bench(name: str, store: Any, threads: int) -> None:
    await store.reserve_calls({"warm": 10})  # opens connections, applies migrations
    counter = iter(range(RESERVATIONS))
    granted = 0

    async def worker() -> None:
        nonlocal granted
        for i in counter:
            thread = f"t{i % threads}"
            held = await store.reserve_calls({f"{thread}:*": 10**9, f"{thread}:tool{i % 3}": 10**9})
            granted += held.granted

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    elapsed = time.perf_counter() - start
    where = "one thread" if threads == 1 else f"{threads} threads"
    print(
        f"{name:<12} {where:<12} {RESERVATIONS / elapsed:>8,.0f} reservations/s "
        f"({elapsed / RESERVATIONS * 1000:.2f} ms each)"
    )
    assert granted == RESERVATIONS


async def main() -> None:
    memory = InMemoryCallCountStore()
    for threads in (1, 100):
        await bench("in-memory", memory, threads)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(os.path.join(tmp, "bench.db"))
        for threads in (1, 100):
            await bench("SQLite", store, threads)
        await store.close()
    dsn = os.environ.get("SLUICEGATE_BENCH_DSN")
    stop: Callable[[], None] | None = None
    if dsn is None:
        sys.path.insert(0, TESTKIT)
        from memory_pg_server import PostgresUnavailable, start_postgres

        try:
            dsn, stop = start_postgres(in_memory=True)
        except PostgresUnavailable as error:
            print(f"PostgreSQL skipped: {error}")
            return
    try:
        pg = PostgresStore(dsn)
        for threads in (1, 100):
            await bench("PostgreSQL", pg, threads)
        await pg.close()
    finally:
        if stop is not None:
            stop()


if __name__ == "__main__":
    asyncio.run(main())
