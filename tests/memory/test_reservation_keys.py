"""Budget reservations made once per idempotency key, and settlements that charge once, on the
in-memory store, SQLite and PostgreSQL: a retried `reserve` (a durable run's activity whose
worker died after the commit) answers the reservation it made instead of adding another."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from sluicegate.budget import MAX_IDEMPOTENCY_KEY, Reservation
from sluicegate.processors import InMemoryUsageStore
from sluicegate.storage import PostgresStore, SQLiteStore

USAGE = {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30, "reserved": 1}
KEY = "resource:u1"


async def _database(dsn: str) -> str:
    name = "k_" + uuid.uuid4().hex[:16]
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    return dsn.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the stores of one test keep their budget (one file or database, shared)."""
    if request.param == "memory":
        return "memory"
    if request.param == "sqlite":
        return str(tmp_path / "usage.db")
    return await _database(request.getfixturevalue("postgres_dsn"))


@pytest.fixture
async def opened(location: str) -> AsyncIterator[list[Any]]:
    stores: list[Any] = []
    yield stores
    for store in stores:
        if not isinstance(store, InMemoryUsageStore):
            await store.close()


@pytest.fixture
def open_store(location: str, opened: list[Any]) -> Any:
    """`open_store()`: a store on the test's location (every in-memory one is the same)."""
    shared = InMemoryUsageStore()

    def make() -> Any:
        store: Any
        if location == "memory":
            store = shared
        elif location.startswith("postgresql://") or location.startswith("postgres://"):
            store = PostgresStore(location)
        else:
            store = SQLiteStore(location)
        opened.append(store)
        return store

    return make


async def reserve(
    store: Any, amount: float, idempotency_key: str | None, limit: float = 100.0
) -> Reservation:
    result: Reservation = await store.reserve(
        KEY,
        amount,
        limit=limit,
        since=None,
        usage=USAGE,
        at=datetime.now(UTC),
        idempotency_key=idempotency_key,
    )
    return result


async def test_reserving_twice_with_one_key_charges_once(open_store: Any) -> None:
    store = open_store()
    first = await reserve(store, 2.0, "run-1/reserve-1")
    again = await reserve(store, 2.0, "run-1/reserve-1")
    assert first.id is not None
    assert again == first  # the same reservation, decided on the same spend
    assert await store.total(KEY, None) == pytest.approx(2.0)


async def test_a_repeated_key_answers_the_spend_its_reservation_was_decided_on(open_store: Any) -> None:
    store = open_store()
    first = await reserve(store, 2.0, "a")
    second = await reserve(store, 3.0, "b")
    assert (first.spent, second.spent) == (0.0, 2.0)
    assert await reserve(store, 2.0, "a") == first  # not the spend of now ($5)
    assert await store.total(KEY, None) == pytest.approx(5.0)


async def test_distinct_keys_and_no_key_reserve_each_time(open_store: Any) -> None:
    store = open_store()
    ids = {(await reserve(store, 1.0, key)).id for key in ("a", "b", None, None)}
    assert len(ids) == 4
    assert await store.total(KEY, None) == pytest.approx(4.0)


async def test_one_idempotency_key_under_two_budget_keys_is_two_reservations(open_store: Any) -> None:
    store = open_store()
    at = datetime.now(UTC)
    one = await store.reserve("resource:a", 1.0, limit=9, since=None, usage=USAGE, at=at, idempotency_key="k")
    two = await store.reserve("resource:b", 1.0, limit=9, since=None, usage=USAGE, at=at, idempotency_key="k")
    assert one.id != two.id
    assert await store.total("resource:a", None) == await store.total("resource:b", None) == 1.0


async def test_a_refused_reservation_is_decided_again_and_stores_nothing(open_store: Any) -> None:
    store = open_store()
    await reserve(store, 5.0, None)
    refused = await reserve(store, 1.0, "late", limit=5.0)
    assert refused == Reservation(None, 5.0)
    assert await store.total(KEY, None) == pytest.approx(5.0)
    granted = await reserve(store, 1.0, "late", limit=10.0)  # nothing was held under the key
    assert granted.id is not None and await store.total(KEY, None) == pytest.approx(6.0)


async def test_settling_twice_charges_once(open_store: Any) -> None:
    store = open_store()
    held = await reserve(store, 2.0, "run-1/reserve-1")
    assert held.id is not None
    record = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    await store.settle(KEY, held.id, 0.5, record)
    await store.settle(KEY, held.id, 0.5, record)
    assert await store.total(KEY, None) == pytest.approx(0.5)
    # A retried reservation after its settlement still answers it and adds nothing.
    assert (await reserve(store, 2.0, "run-1/reserve-1")).id == held.id
    assert await store.total(KEY, None) == pytest.approx(0.5)


async def test_concurrent_reservations_with_one_key_make_one(open_store: Any) -> None:
    """A retried activity can overlap the attempt it replaces (a worker that is only slow):
    concurrent calls with one key, from one store or two, hold one reservation."""
    first, second = open_store(), open_store()
    answers = await asyncio.gather(
        *(reserve(store, 1.0, "same") for store in (first, second) * 8),
        *(reserve(first, 1.0, f"other-{i}") for i in range(4)),
    )
    assert len({a.id for a in answers[:16]}) == 1
    assert await first.total(KEY, None) == pytest.approx(5.0)


@pytest.mark.parametrize("bad", ["", "x" * (MAX_IDEMPOTENCY_KEY + 1), 7])
async def test_a_malformed_idempotency_key_is_refused_and_stores_nothing(open_store: Any, bad: Any) -> None:
    store = open_store()
    with pytest.raises((ValueError, TypeError), match="idempotency_key"):
        await reserve(store, 1.0, bad)
    assert await store.total(KEY, None) == 0.0
