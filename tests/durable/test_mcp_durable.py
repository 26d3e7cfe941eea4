"""An agent with MCP tools on Temporal: each MCP call is a tool activity on the worker, through
the worker's own `MCPClient`; a server's question (elicitation) suspends the workflow, and the
answer is a validated update whose resumed activity answers the question the worker holds."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from temporalio.client import Client
from tests.mcp.helpers import fixture_server

from sluicegate import Agent, Sluicegate
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.errors import InvalidInputError
from sluicegate.mcp import MCPClient
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}


@asynccontextmanager
async def durable(temporal_server: Any, agent: Agent[Any]) -> AsyncIterator[TemporalRuns]:
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
        yield TemporalRuns(client, task_queue=queue, settings=FAST)


async def history_activities(runs: TemporalRuns, run_id: str) -> set[str]:
    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    return {
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    }


async def chunks_of(runs: TemporalRuns, agent: Agent[Any], run_id: str, offset: int = 0) -> list[Any]:
    output = await runs.observe(agent, run_id, offset=offset)
    return [c async for c in output.full_stream]


async def test_each_mcp_call_is_a_tool_activity_on_the_worker(temporal_server: Any) -> None:
    async with MCPClient(servers={"fx": fixture_server()}, timeout=20) as mcp:
        model = MockModel([tool_call_step(("c1", "fx_echo", {"text": "hello"})), text_step("echoed")])
        agent = Agent("echoer", model=model, tools=await mcp.list_tools())
        async with durable(temporal_server, agent) as runs:
            run_id = await runs.start(agent, "echo hello")
            result = await asyncio.wait_for(runs.result(run_id), 60)
            assert result["text"] == "echoed"
            assert "sluicegate.echoer.tool.fx_echo" in await history_activities(runs, run_id)
            chunks = await chunks_of(runs, agent, run_id)
            (echo,) = [c for c in chunks if c.type == "tool-result"]
            assert echo.payload.result == {"result": "hello"}


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_a_servers_question_is_a_validated_workflow_update(temporal_server: Any, protocol: str) -> None:
    """2026 protocol: the round travels in the workflow's payload (any worker can resume it);
    2025 protocols: the worker holds the call open until the update's activity answers it."""
    async with MCPClient(servers={"fx": fixture_server(protocol=protocol)}, timeout=20) as mcp:
        model = MockModel([tool_call_step(("c1", "fx_book", {"flight": "SK123"})), text_step("booked")])
        agent = Agent("travel", model=model, tools=await mcp.list_tools())
        async with durable(temporal_server, agent) as runs:
            run_id = await runs.start(agent, "book SK123")
            first = await asyncio.wait_for(chunks_of(runs, agent, run_id), 60)
            assert first[-1].type == "tool-call-suspended"
            assert first[-1].payload.suspend_payload["message"] == "How many seats on SK123?"
            assert mcp.open_questions == (1 if protocol == "legacy" else 0)
            with pytest.raises(InvalidInputError, match="seats"):
                await runs.resume_stream(run_id, {"action": "accept", "content": {"seats": "two"}})
            resumed = await runs.resume_stream(run_id, {"action": "accept", "content": {"seats": 3}})
            rest = await asyncio.wait_for(chunks_of(runs, agent, run_id, offset=resumed["offset"]), 60)
            (booked,) = [c for c in rest if c.type == "tool-result"]
            assert booked.payload.result == {"result": "booked 3 seats on SK123, window=False"}
            assert (await runs.result(run_id))["text"] == "booked"
            assert mcp.open_questions == 0
