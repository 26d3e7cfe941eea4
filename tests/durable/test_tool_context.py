"""What a tool's activity receives of the conversation: a tool that reads its `ToolContext` sees
the run's messages, as in one process; a `@tool` function without a `ToolContext` parameter
never sees them, and its calls do not carry them (the conversation is the largest part of a
call's input, and it grows with every step)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import ToolContext

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}


async def test_only_a_tool_that_reads_its_context_gets_the_conversation(temporal_server: Any) -> None:
    seen: list[list[str]] = []

    @tool
    async def reader(n: int, context: ToolContext) -> int:
        """Reads the conversation."""
        seen.append([m.text for m in context.messages if getattr(m, "role", None) == "user"])
        return n

    @tool
    async def adder(n: int) -> int:
        """Adds one."""
        return n + 1

    assert reader.reads_context and not adder.reads_context
    agent = Agent(
        f"context-{uuid.uuid4().hex[:8]}",
        model=MockModel(
            [
                tool_call_step(("c1", "reader", {"n": 1}), ("c2", "adder", {"n": 2})),
                text_step("Done."),
            ]
        ),
        tools=[reader, adder],
    )
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings=FAST)
        run_id = await runs.start(agent, "count with me")
        result = await asyncio.wait_for(runs.result(run_id), 60)
        history = await client.get_workflow_handle(run_id).fetch_history()
    assert result["text"] == "Done."
    assert seen == [["count with me"]]
    inputs: dict[str, Any] = {}
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            attributes = event.activity_task_scheduled_event_attributes
            call = json.loads(attributes.input.payloads[0].data)
            if "toolCallId" in call:
                inputs[call["toolCallId"]] = call
    assert [m["role"] for m in inputs["c1"]["messages"]] == ["user", "assistant"]
    assert inputs["c2"]["messages"] == []
