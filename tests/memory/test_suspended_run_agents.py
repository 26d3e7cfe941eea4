"""Agents over a shared suspended-run store, on SQLite and PostgreSQL: a run suspended by one
Agent instance is resumed by another, and of concurrent approvals of one call exactly one runs
it (the store's claim, through the agent's API)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from memory_pg_server import create_database

from sluicegate import Agent
from sluicegate.storage import PostgresStore, SQLiteStore, SuspendedRunNotFoundError
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool

Factory = Callable[[], Awaitable[Any]]


@pytest.fixture(params=["sqlite", "postgres"])
async def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Factory]:
    """`await make()` opens another store on one database, as another process would."""
    opened: list[Any] = []
    if request.param == "postgres":
        location = await create_database(request.getfixturevalue("postgres_dsn"))
    else:
        location = str(tmp_path / "runs.db")

    async def make() -> Any:
        store = PostgresStore(location) if request.param == "postgres" else SQLiteStore(location)
        opened.append(store)
        return store

    yield make
    await asyncio.gather(*(s.close() for s in opened))


def build(store: Any, steps: list[Any], ran: list[str]) -> Agent:
    async def execute(input: Any, context: ToolContext) -> Any:
        ran.append(input["word"])
        return {"word": input["word"]}

    lookup = create_tool(id="lookup", input_schema={"type": "object"}, execute=execute)
    return Agent("hitl", instructions="test", model=MockModel(steps), tools=[lookup], suspended_runs=store)


async def test_another_agent_resumes_and_one_of_many_approvals_wins(shared_store: Factory) -> None:
    ran: list[str] = []
    first = build(await shared_store(), [tool_call_step(("c1", "lookup", {"word": "sluice"}))], ran)
    suspended = await first.generate("hi", require_tool_approval=True)
    assert suspended.finish_reason == "suspended"
    approvers = [build(await shared_store(), [text_step("done")], ran) for _ in range(4)]

    async def approve(agent: Agent) -> Any:
        try:
            return await agent.approve_tool_call_generate(run_id=suspended.run_id)
        except SuspendedRunNotFoundError as refused:
            return refused

    outcomes = await asyncio.gather(*(approve(a) for a in approvers))
    winners = [o for o in outcomes if not isinstance(o, SuspendedRunNotFoundError)]
    assert len(winners) == 1 and winners[0].text == "done"
    assert ran == ["sluice"]
    assert await approvers[0].list_suspended_runs() == []
