"""Memory benchmarks: loading the last 50 messages of a 100,000-message thread (SQLite and
PostgreSQL; target < 10 ms) and one semantic-recall vector query over 100,000 stored vectors
(sqlite-vec and pgvector; target < 50 ms).

    uv run python benchmarks/memory.py            # starts a throwaway PostgreSQL when it can
    SLUICEGATE_BENCH_DSN=postgresql://... uv run python benchmarks/memory.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from sluicegate.messages.message import Message
from sluicegate.storage import MemoryStore, PostgresStore, SQLiteStore, Thread
from sluicegate.vector import PgVector, SQLiteVector, VectorStore

MESSAGES = 100_000
VECTORS = 100_000
DIMENSIONS = 384
T0 = datetime(2025, 1, 1, tzinfo=UTC)
TESTKIT = str(Path(__file__).resolve().parent.parent / "tests" / "memory")
"""Where `memory_pg_server` (the throwaway PostgreSQL starter the tests use) lives."""


async def timed(fn: Callable[[], Awaitable[Any]], runs: int = 50) -> tuple[float, float]:
    """Median and p95 in milliseconds (after two warm-up calls)."""
    for _ in range(2):
        await fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


async def bench_history(name: str, store: MemoryStore) -> None:
    await store.create_thread(Thread(id="big", resource_id="u1"))
    await store.create_thread(Thread(id="other", resource_id="u1"))
    batch: list[Message] = []
    for i in range(MESSAGES):
        batch.append(
            Message.text_message(
                "user" if i % 2 == 0 else "assistant",
                f"message number {i} " * 4,
                thread_id="big",
                resource_id="u1",
                created_at=T0 + timedelta(seconds=i),
            )
        )
        if len(batch) == 5000:
            await store.save_messages(batch)
            batch = []
    await store.save_messages(batch)
    await store.save_messages(
        [
            Message.text_message(
                "user",
                f"elsewhere {i}",
                thread_id="other",
                resource_id="u1",
                created_at=T0 + timedelta(seconds=i),
            )
            for i in range(10_000)
        ]
    )
    count = await store.count_messages("big")
    loaded = await store.list_messages("big", last=50)
    assert len(loaded) == 50 and loaded[-1].created_at > loaded[0].created_at
    median, p95 = await timed(lambda: store.list_messages("big", last=50))
    print(
        f"{name:<10} last 50 of {count:,}-message thread: median {median:.2f} ms, p95 {p95:.2f} ms "
        f"(target < 10 ms)"
    )


async def bench_vectors(name: str, vector: VectorStore) -> None:
    rng = np.random.default_rng(0)
    data = rng.standard_normal((VECTORS, DIMENSIONS)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    await vector.create_index("bench", DIMENSIONS)
    for start in range(0, VECTORS, 5000):
        chunk = data[start : start + 5000]
        ids = [f"m{start + i}" for i in range(len(chunk))]
        await vector.upsert(
            "bench",
            chunk.tolist(),
            ids,
            [
                {"message_id": i, "thread_id": f"t{n % 100}", "resource_id": "u1"}
                for n, i in enumerate(ids, start)
            ],
        )
    query = data[123].tolist()
    hits = await vector.query("bench", query, top_k=4, filter={"resource_id": "u1"})
    assert hits and hits[0].id == "m123"
    median, p95 = await timed(
        lambda: vector.query("bench", query, top_k=4, filter={"resource_id": "u1"}), runs=20
    )
    print(
        f"{name:<10} top-4 recall over {VECTORS:,} vectors (resource filter): median {median:.1f} ms, "
        f"p95 {p95:.1f} ms (target < 50 ms)"
    )
    median, p95 = await timed(
        lambda: vector.query("bench", query, top_k=4, filter={"thread_id": "t7", "resource_id": "u1"}),
        runs=20,
    )
    print(
        f"{name:<10} top-4 recall over {VECTORS:,} vectors (thread filter):   median {median:.1f} ms, "
        f"p95 {p95:.1f} ms"
    )


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.db")
        store = SQLiteStore(path)
        await bench_history("SQLite", store)
        await store.close()
        vector = SQLiteVector(os.path.join(tmp, "vectors.db"))
        await bench_vectors("sqlite-vec", vector)
        await vector.close()

    dsn = os.environ.get("SLUICEGATE_BENCH_DSN")
    stop: Callable[[], None] | None = None
    if dsn is None:
        sys.path.insert(0, TESTKIT)
        from memory_pg_server import PostgresUnavailable, start_postgres

        try:
            dsn, stop = start_postgres()
        except PostgresUnavailable as error:
            print(f"PostgreSQL skipped: {error}")
            return
    try:
        pg_store = PostgresStore(dsn)
        await bench_history("PostgreSQL", pg_store)
        await pg_store.close()
        pg_vector = PgVector(dsn)
        await bench_vectors("pgvector", pg_vector)
        await pg_vector.close()
    finally:
        if stop is not None:
            stop()


if __name__ == "__main__":
    asyncio.run(main())
