"""CostGuard as a budget: reservations before the call, settled after, charged on every path,
on the in-memory store, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tenancy_kit import EchoModel

from sluicegate import Agent, RequestContext
from sluicegate.errors import APICallError
from sluicegate.processors import CostGuardProcessor, InMemoryUsageStore
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.storage import PostgresStore, SQLiteStore

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
    import uuid

    import asyncpg

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
