"""Call counters of ToolCallLimit and ModelCallLimit kept per thread, on the in-memory store,
SQLite and PostgreSQL: 50 concurrent runs of one thread never exceed a limit, not by one call."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from memory_pg_server import create_database

from sluicegate import Agent, RequestContext, create_tool
from sluicegate.memory import ThreadAccessError
from sluicegate.models.base import CallOptions
from sluicegate.processors import InMemoryCallCountStore, ModelCallLimit, ToolCallLimit
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.storage import CallCountStore, PostgresStore, SQLiteStore, Thread
from sluicegate.testing import MockModel, text_step, tool_call_step

RUNS = 50


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def count_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemoryCallCountStore()
        return
    store: Any = (
        SQLiteStore(tmp_path / "counts.db")
        if request.param == "sqlite"
        else PostgresStore(await create_database(request.getfixturevalue("postgres_dsn")))
    )
    if request.param == "postgres":
        await store.pool()  # migrated before the runs race
    yield store
    await store.close()


def on_thread(thread_id: str = "t1", resource: str = "u1") -> RequestContext:
    return RequestContext({THREAD_ID_KEY: thread_id, RESOURCE_ID_KEY: resource})


def tool_then_answer(tool_names: tuple[str, ...]) -> Any:
    """One step: a call of each of `tool_names` while no tool result is in the prompt, then text."""

    def step(options: CallOptions) -> list[Any]:
        if any(message["role"] == "tool" for message in options.prompt):
            return text_step("done")
        return tool_call_step(*[(f"c{uuid.uuid4().hex[:8]}", name, {}) for name in tool_names])

    return step


async def test_store_reserves_all_counters_or_none(count_store: CallCountStore) -> None:
    first = await count_store.reserve_calls({"a": 2, "b": 1})
    assert first.granted and first.counts == {"a": 1, "b": 1}
    refused = await count_store.reserve_calls({"a": 2, "b": 1})
    assert not refused.granted and refused.exceeded == "b" and refused.counts == {"a": 1, "b": 1}
    assert await count_store.call_counts(["a", "b", "c"]) == {"a": 1, "b": 1, "c": 0}
    zero = await count_store.reserve_calls({"z": 0})
    assert not zero.granted and zero.exceeded == "z"
    with pytest.raises(ValueError, match="must not be negative"):
        await count_store.reserve_calls({"a": -1})
    with pytest.raises(ValueError, match="longer than"):
        await count_store.reserve_calls({"k" * 5000: 1})


async def test_concurrent_reservations_never_pass_the_limit(count_store: CallCountStore) -> None:
    answers = await asyncio.gather(*(count_store.reserve_calls({"*": 7, "send": 5}) for _ in range(RUNS)))
    assert sum(a.granted for a in answers) == 5
    assert await count_store.call_counts(["*", "send"]) == {"*": 5, "send": 5}


@pytest.mark.parametrize("on_limit", ["tripwire", "answer"])
async def test_tool_limit_holds_under_concurrent_runs_of_one_thread(count_store: Any, on_limit: str) -> None:
    ran: list[str] = []

    async def execute(args: Any, context: Any) -> str:
        ran.append(context.tool_name)
        await asyncio.sleep(0)
        return "sent"

    send = create_tool(id="send_email", description="send", execute=execute)
    lookup = create_tool(id="lookup", description="look", execute=execute)
    limit = ToolCallLimit(
        limits={"*": 12, "send_email": 7}, scope="thread", store=count_store, on_limit=on_limit
    )
    model = MockModel([tool_then_answer(("send_email", "lookup"))] * (2 * RUNS))
    agent = Agent(name="a", model=model, tools=[send, lookup], output_processors=[limit])
    results = await asyncio.gather(
        *(agent.generate("go", request_context=on_thread(), max_steps=3) for _ in range(RUNS))
    )
    # "*" never passed (a tripped run's sibling call may be cancelled before it reserves)
    assert len(ran) == 12 if on_limit == "answer" else 7 <= len(ran) <= 12
    assert ran.count("send_email") <= 7
    if on_limit == "tripwire":
        assert sum(r.tripwire is not None for r in results) >= RUNS - 12
    else:
        assert all(r.tripwire is None for r in results)


async def test_model_limit_holds_under_concurrent_runs_of_one_thread(count_store: Any) -> None:
    limit = ModelCallLimit(thread=9, run=1, store=count_store)
    model = MockModel([text_step("ok")] * RUNS)
    agent = Agent(name="a", model=model, input_processors=[limit])
    results = await asyncio.gather(*(agent.generate("hi", request_context=on_thread()) for _ in range(RUNS)))
    assert len(model.calls) == 9
    assert sum(r.tripwire is None for r in results) == 9


async def test_a_memory_store_counts_a_thread_only_for_its_own_resource(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "owned.db")
    try:
        await store.create_thread(Thread(id="t1", resource_id="u1"))
        limit = ModelCallLimit(thread=5, store=store)
        agent = Agent(name="a", model=MockModel([text_step("ok")] * 2), input_processors=[limit])
        assert (await agent.generate("hi", request_context=on_thread("t1", "u1"))).tripwire is None
        with pytest.raises(ThreadAccessError):
            await agent.generate("hi", request_context=on_thread("t1", "intruder"))
        assert await store.call_counts(["model-calls:2:t1:thread"]) == {"model-calls:2:t1:thread": 1}
    finally:
        await store.close()
