"""CostGuard as a budget: reservations before the call, settled after, charged on every path,
on the in-memory store, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenancy_kit import EchoModel

from sluicegate import Agent, RequestContext
from sluicegate.budget import Reservation
from sluicegate.errors import APICallError
from sluicegate.processors import CostGuardProcessor, InMemoryUsageStore
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.storage import PostgresStore, SQLiteStore, StorageError

# $1 per million output tokens: 400,000 tokens = $0.40 per call, estimated and real alike.
PRICING = {"echo-model": {"input": 0.0, "output": 1.0}}
PER_CALL = 0.4
OUT = 400_000


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def usage_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemoryUsageStore()
        return
    store: Any = (
        SQLiteStore(tmp_path / "usage.db")
        if request.param == "sqlite"
        else PostgresStore(await fresh_database(request.getfixturevalue("postgres_dsn")))
    )
    yield store
    await store.close()


async def fresh_database(dsn: str) -> str:
    """An empty database on the session's PostgreSQL server."""
    name = "u_" + uuid.uuid4().hex[:16]
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    return dsn.rsplit("/", 1)[0] + f"/{name}"


def user(resource: str = "u1") -> RequestContext:
    return RequestContext({RESOURCE_ID_KEY: resource})


def guarded(store: Any, model: EchoModel, max_cost: float = 1.0) -> Agent:
    guard = CostGuardProcessor(
        max_cost=max_cost, scope="resource", store=store, pricing=PRICING, default_output_tokens=OUT
    )
    return Agent(name="a", model=model, input_processors=[guard])


async def test_concurrent_requests_cannot_all_pass_the_budget_check(usage_store: Any) -> None:
    model = EchoModel(delay=0.01, output_tokens=OUT)
    agent = guarded(usage_store, model)
    results = await asyncio.gather(*(agent.generate("hi", request_context=user()) for _ in range(30)))
    # $0, $0.40, $0.80 are under the $1 budget; the 4th reservation finds $1.20 and is refused.
    assert len(model.calls) == 3
    assert sum(r.tripwire is None for r in results) == 3
    spent = await usage_store.total("resource:u1", None)
    assert spent == pytest.approx(3 * PER_CALL)
    assert spent <= 1.0 + PER_CALL  # at most one in-flight estimate over the budget


async def test_a_failed_call_keeps_its_reservation_as_the_charge(usage_store: Any) -> None:
    model = EchoModel(fail=APICallError("boom", status_code=400))
    agent = guarded(usage_store, model, max_cost=10.0)
    with pytest.raises(APICallError):
        await agent.generate("hi", request_context=user())
    assert await usage_store.total("resource:u1", None) == pytest.approx(PER_CALL, rel=0.01)


async def test_a_client_that_leaves_mid_stream_is_charged(usage_store: Any) -> None:
    model = EchoModel(delay=0.01, output_tokens=OUT)
    agent = guarded(usage_store, model, max_cost=10.0)
    output = await agent.stream("one two three four", request_context=user())
    stream = output.full_stream.__aiter__()
    async for chunk in stream:
        if chunk.type == "text-delta":
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert await usage_store.total("resource:u1", None) == pytest.approx(PER_CALL, rel=0.01)


async def test_settled_cost_replaces_the_estimate(usage_store: Any) -> None:
    model = EchoModel(output_tokens=OUT // 4)  # the call used a quarter of the expected output
    agent = guarded(usage_store, model, max_cost=10.0)
    await agent.generate("hi", request_context=user())
    assert await usage_store.total("resource:u1", None) == pytest.approx(PER_CALL / 4)


async def test_reserve_is_atomic_under_many_concurrent_reservations(usage_store: Any) -> None:
    now = datetime.now(UTC)
    held = await asyncio.gather(
        *(usage_store.reserve("k", 1.0, limit=10.0, since=None, usage={}, at=now) for _ in range(50))
    )
    assert sum(h.id is not None for h in held) == 10
    assert await usage_store.total("k", None) == pytest.approx(10.0)


def test_the_estimate_is_never_zero() -> None:
    guard = CostGuardProcessor(max_cost=1.0)
    estimate = guard.estimate(
        "openai/gpt-4o", [{"role": "user", "content": [{"type": "text", "text": ""}]}], [], None
    )
    assert estimate.input_tokens > 0 and estimate.output_tokens == 256
    long = guard.estimate(
        "openai/gpt-4o", [{"role": "user", "content": [{"type": "text", "text": "word " * 1000}]}], [], 50
    )
    assert long.input_tokens >= 1000 and long.output_tokens == 50
    assert guard.cost_of("gpt-4o", estimate) > 0


# ---------------------------------------------------------------- batched reservations
#
# PostgreSQL commits concurrent reservations together (one `sluicegate_reserve_many` call per
# batch). Whatever the store, concurrent reservations must decide exactly as if they ran one by
# one in arrival order, each caller must get its own answer, and a bad one fails alone.

HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class Ask:
    key: int
    amount: float
    window: int  # 0: all time; 1: the last hour; 2: only the future
    limit: float


asks = st.lists(
    st.builds(
        Ask,
        key=st.integers(0, 2),
        amount=st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0, 3.0]),
        window=st.integers(0, 2),
        limit=st.sampled_from([1.0, 2.5, 4.0, 7.0]),
    ),
    min_size=1,
    max_size=40,
)


def serial_answers(asks: list[Ask], seeded: dict[int, float], now: datetime) -> list[tuple[bool, float]]:
    """What one-by-one reservations in arrival order answer: (granted, spent before)."""
    rows: list[tuple[int, datetime, float]] = [(k, now - 2 * HOUR, c) for k, c in seeded.items()]
    answers = []
    for ask in asks:
        since = window_start(ask.window, now)
        spent = sum(c for k, at, c in rows if k == ask.key and (since is None or at >= since))
        granted = spent < ask.limit
        if granted:
            rows.append((ask.key, now, ask.amount))
        answers.append((granted, spent))
    return answers


def window_start(window: int, now: datetime) -> datetime | None:
    return None if window == 0 else now - HOUR if window == 1 else now + HOUR


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(asks=asks, seeded=st.dictionaries(st.integers(0, 2), st.sampled_from([0.5, 2.0, 5.0])))
async def test_concurrent_reservations_decide_as_one_by_one_in_arrival_order(
    usage_store: Any, asks: list[Ask], seeded: dict[int, float]
) -> None:
    prefix = uuid.uuid4().hex
    now = datetime.now(UTC)
    for key, cost in seeded.items():
        await usage_store.record(f"{prefix}:{key}", cost, {}, now - 2 * HOUR)
    held = await asyncio.gather(
        *(
            usage_store.reserve(
                f"{prefix}:{a.key}",
                a.amount,
                limit=a.limit,
                since=window_start(a.window, now),
                usage={"caller": n},
                at=now,
            )
            for n, a in enumerate(asks)
        )
    )
    expected = serial_answers(asks, seeded, now)
    assert [(h.id is not None, h.spent) for h in held] == [
        (granted, pytest.approx(spent)) for granted, spent in expected
    ]
    for key in range(3):
        granted = sum(a.amount for a, (ok, _) in zip(asks, expected, strict=True) if ok and a.key == key)
        total = await usage_store.total(f"{prefix}:{key}", None)
        assert total == pytest.approx(seeded.get(key, 0.0) + granted)


async def test_a_tight_budget_is_overshot_by_at_most_one_estimate(usage_store: Any) -> None:
    now = datetime.now(UTC)
    amounts = [0.1 + (n % 7) * 0.05 for n in range(300)]
    held = await asyncio.gather(
        *(usage_store.reserve("tight", a, limit=5.0, since=None, usage={}, at=now) for a in amounts)
    )
    total = await usage_store.total("tight", None)
    granted = [a for a, h in zip(amounts, held, strict=True) if h.id is not None]
    assert total == pytest.approx(sum(granted))
    assert 5.0 <= total <= 5.0 + max(amounts)
    assert all(h.spent >= 5.0 for h in held if h.id is None)
    assert len({h.id for h in held if h.id is not None}) == len(granted)


@pytest.mark.parametrize("amount", [float("nan"), float("inf"), -1.0])
async def test_an_amount_that_would_corrupt_the_budget_is_refused(usage_store: Any, amount: float) -> None:
    now = datetime.now(UTC)
    with pytest.raises(ValueError, match="finite, non-negative"):
        await usage_store.reserve("k", amount, limit=1.0, since=None, usage={}, at=now)
    assert (await usage_store.reserve("k", 0.5, limit=1.0, since=None, usage={}, at=now)).id is not None
    assert await usage_store.total("k", None) == pytest.approx(0.5)


# ---------------------------------------------------------------- PostgreSQL group commit


@pytest.fixture
async def pg_usage(postgres_dsn: str) -> AsyncIterator[PostgresStore]:
    store = PostgresStore(await fresh_database(postgres_dsn), max_size=4)
    await store.reserve("warm", 0.0, limit=1.0, since=None, usage={}, at=datetime.now(UTC))
    yield store
    await store.close()


async def rows_of(store: PostgresStore, key: str) -> list[Any]:
    pool = await store.pool()
    return list(
        await pool.fetch(
            "SELECT seq, cost, usage, xmin::text AS tx FROM sluicegate_usage WHERE key = $1 ORDER BY seq",
            key,
        )
    )


async def test_concurrent_reservations_share_commits(pg_usage: PostgresStore) -> None:
    now = datetime.now(UTC)
    await asyncio.gather(
        *(pg_usage.reserve("k", 0.01, limit=100.0, since=None, usage={}, at=now) for _ in range(200))
    )
    rows = await rows_of(pg_usage, "k")
    assert len(rows) == 200
    # One transaction per reservation would be 200; batches commit many at once.
    assert len({row["tx"] for row in rows}) <= 10


async def test_each_caller_gets_the_row_of_its_own_reservation(pg_usage: PostgresStore) -> None:
    now = datetime.now(UTC)
    amounts = [round(0.01 * (n + 1), 2) for n in range(60)]
    held = await asyncio.gather(
        *(
            pg_usage.reserve(f"k{n % 3}", a, limit=100.0, since=None, usage={"caller": n}, at=now)
            for n, a in enumerate(amounts)
        )
    )
    by_seq = {str(row["seq"]): row for key in ("k0", "k1", "k2") for row in await rows_of(pg_usage, key)}
    for n, (amount, reservation) in enumerate(zip(amounts, held, strict=True)):
        assert reservation.id is not None
        row = by_seq[reservation.id]
        assert row["usage"] == {"caller": n} and row["cost"] == pytest.approx(amount)


async def test_a_bad_reservation_in_a_batch_fails_alone(pg_usage: PostgresStore) -> None:
    now = datetime.now(UTC)

    def good(n: int) -> Any:
        return pg_usage.reserve("k", 1.0, limit=100.0, since=None, usage={"caller": n}, at=now)

    results = await asyncio.gather(
        *(good(n) for n in range(10)),
        # PostgreSQL refuses both on the server: a NUL in text, a \u0000 escape in JSONB.
        pg_usage.reserve("bad\x00key", 1.0, limit=100.0, since=None, usage={}, at=now),
        pg_usage.reserve("k", 1.0, limit=100.0, since=None, usage={"bad\x00": 1}, at=now),
        *(good(n) for n in range(10, 20)),
        return_exceptions=True,
    )
    assert all(isinstance(r, asyncpg.PostgresError) for r in results[10:12])
    good_results = results[:10] + results[12:]
    assert all(isinstance(r, Reservation) and r.id is not None for r in good_results)
    rows = await rows_of(pg_usage, "k")
    assert sorted(row["usage"]["caller"] for row in rows) == list(range(20))
    assert await pg_usage.total("k", None) == pytest.approx(20.0)


async def hold_key(store: PostgresStore, key: str) -> asyncpg.Connection:
    """Take `key`'s reservation lock from another session, so a batch touching it waits."""
    from sluicegate.storage.postgres import _USAGE_LOCK_SEED

    conn = await asyncpg.connect(store.dsn)
    await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, $2))", key, _USAGE_LOCK_SEED)
    return conn


_WAITING_HERE = (
    "locktype = 'advisory' AND NOT granted "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
"""A session of this test's database waiting for a reservation lock."""


async def wait_for_lock_waiter(store: PostgresStore) -> None:
    pool = await store.pool()
    for _ in range(500):
        if await pool.fetchval(f"SELECT count(*) FROM pg_locks WHERE {_WAITING_HERE}"):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the batch never waited on the held key")


async def test_a_reservation_cancelled_while_queued_is_never_written(pg_usage: PostgresStore) -> None:
    now = datetime.now(UTC)
    blocker = await hold_key(pg_usage, "k")
    try:
        first = asyncio.create_task(
            pg_usage.reserve("k", 1.0, limit=100.0, since=None, usage={"caller": 0}, at=now)
        )
        await wait_for_lock_waiter(pg_usage)  # batch 1 is in flight, stuck on the lock
        queued = [
            asyncio.create_task(
                pg_usage.reserve("k", 1.0, limit=100.0, since=None, usage={"caller": n}, at=now)
            )
            for n in range(1, 5)
        ]
        await asyncio.sleep(0.05)
        queued[1].cancel()
    finally:
        await blocker.close()  # releases the lock
    await first
    results = await asyncio.gather(*queued, return_exceptions=True)
    assert isinstance(results[1], asyncio.CancelledError)
    rows = await rows_of(pg_usage, "k")
    assert sorted(row["usage"]["caller"] for row in rows) == [0, 1, 3, 4]
    assert await pg_usage.total("k", None) == pytest.approx(4.0)


async def test_a_reservation_cancelled_in_flight_stands_as_the_charge(pg_usage: PostgresStore) -> None:
    now = datetime.now(UTC)
    blocker = await hold_key(pg_usage, "k")
    try:
        # Both join the first batch: the sender starts after they were queued.
        doomed, neighbour = (
            asyncio.create_task(
                pg_usage.reserve("k", amount, limit=100.0, since=None, usage={"caller": n}, at=now)
            )
            for n, amount in enumerate([1.0, 2.0])
        )
        await wait_for_lock_waiter(pg_usage)
        doomed.cancel()
        with pytest.raises(asyncio.CancelledError):
            await doomed
    finally:
        await blocker.close()
    held = await neighbour
    assert held.id is not None and held.spent == pytest.approx(1.0)  # decided after the doomed one
    rows = await rows_of(pg_usage, "k")
    assert [row["usage"]["caller"] for row in rows] == [0, 1]
    assert await pg_usage.total("k", None) == pytest.approx(3.0)


async def test_close_sends_the_queued_reservations_then_refuses(postgres_dsn: str) -> None:
    store = PostgresStore(await fresh_database(postgres_dsn))
    now = datetime.now(UTC)
    pending = [
        asyncio.create_task(store.reserve("k", 1.0, limit=100.0, since=None, usage={}, at=now))
        for _ in range(20)
    ]
    await asyncio.sleep(0)
    await store.close()
    assert all(task.done() and task.result().id is not None for task in pending)
    with pytest.raises(StorageError):
        await store.reserve("k", 1.0, limit=100.0, since=None, usage={}, at=now)


async def test_batches_from_several_processes_hold_one_budget(postgres_dsn: str) -> None:
    # Several stores on one database stand for several server processes: their batches run at
    # once and only the per-key locks keep the budget.
    dsn = await fresh_database(postgres_dsn)
    stores = [PostgresStore(dsn, max_size=2) for _ in range(4)]
    try:
        now = datetime.now(UTC)
        await asyncio.gather(*(s.schema_versions() for s in stores))
        held = await asyncio.gather(
            *(
                stores[n % 4].reserve(f"k{n % 2}", 1.0, limit=20.0, since=None, usage={}, at=now)
                for n in range(400)
            )
        )
        assert sum(h.id is not None for h in held) == 40  # 20 per key, one by one
        for key in ("k0", "k1"):
            assert await stores[0].total(key, None) == pytest.approx(20.0)
    finally:
        await asyncio.gather(*(s.close() for s in stores))


async def test_callers_learn_that_the_database_is_unreachable() -> None:
    store = PostgresStore("postgresql://postgres@127.0.0.1:1/none", max_size=1)
    now = datetime.now(UTC)
    for _ in range(2):  # the second round is not stuck behind the failed first one
        results = await asyncio.wait_for(
            asyncio.gather(
                *(store.reserve("k", 1.0, limit=9.0, since=None, usage={}, at=now) for _ in range(5)),
                return_exceptions=True,
            ),
            timeout=30,
        )
        assert all(isinstance(r, OSError) for r in results)
    await store.close()


async def test_a_batch_whose_connection_is_killed_fails_and_the_next_one_works(
    pg_usage: PostgresStore,
) -> None:
    now = datetime.now(UTC)
    blocker = await hold_key(pg_usage, "k")
    try:
        batch = [
            asyncio.create_task(pg_usage.reserve("k", 1.0, limit=9.0, since=None, usage={}, at=now))
            for _ in range(3)
        ]
        await wait_for_lock_waiter(pg_usage)
        await blocker.execute(f"SELECT pg_terminate_backend(pid) FROM pg_locks WHERE {_WAITING_HERE}")
        results = await asyncio.gather(*batch, return_exceptions=True)
    finally:
        await blocker.close()
    assert all(isinstance(r, asyncpg.PostgresError | asyncpg.InterfaceError) for r in results)
    assert await rows_of(pg_usage, "k") == []  # the killed transaction wrote nothing
    held = await pg_usage.reserve("k", 1.0, limit=9.0, since=None, usage={}, at=now)
    assert held.id is not None and held.spent == 0.0


@pytest.mark.parametrize("cost", [float("nan"), float("inf"), -0.5])
async def test_a_settlement_that_would_corrupt_the_budget_is_refused(usage_store: Any, cost: float) -> None:
    now = datetime.now(UTC)
    held = await usage_store.reserve("k", 0.25, limit=1.0, since=None, usage={}, at=now)
    assert held.id is not None
    with pytest.raises(ValueError, match="settled cost must be a finite, non-negative"):
        await usage_store.settle("k", held.id, cost, {})
    assert await usage_store.total("k", None) == pytest.approx(0.25)
    await usage_store.settle("k", held.id, 0.1, {"output_tokens": 1})
    assert await usage_store.total("k", None) == pytest.approx(0.1)


async def test_a_settlement_names_a_reservation_by_its_integer_id(usage_store: Any) -> None:
    with pytest.raises(ValueError, match="reservation id must be an integer"):
        await usage_store.settle("k", "run", 0.1, {})
