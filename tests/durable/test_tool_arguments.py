"""Durable runs give a redacted tool call's tool what `tool_arguments` says (issue 31, item 5):
the guard's record of the model's arguments travels from the model activity to the workflow
in its hook state, and the tool activity receives them; the run's result shows the redaction."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate import Agent, Sluicegate, create_tool
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.processors import RegexFilter
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}
EMAIL = "jane.doe@example.com"


@pytest.mark.parametrize("tool_arguments", ["shown", "rewritten"])
async def test_the_tool_activity_receives_what_the_setting_says(
    temporal_server: Any, tool_arguments: str
) -> None:
    received: list[Any] = []

    async def execute(args: Any, context: Any) -> str:
        received.append(args)
        return "shipped"

    tool = create_tool(
        id="lookup_order", description="Look up", input_schema={"type": "object"}, execute=execute
    )
    agent = Agent(
        f"orders-{tool_arguments}",
        model=MockModel([tool_call_step(("c1", "lookup_order", {"email": EMAIL})), text_step("It shipped.")]),
        tools=[tool],
        output_processors=[
            RegexFilter(presets=["pii"], strategy="redact", tool_arguments=tool_arguments)  # type: ignore[arg-type]
        ],
    )
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    app = Sluicegate(agents={agent.id: agent})
    async with create_worker(client, app, task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings=FAST)
        run_id = await runs.start(agent, "where is my order?")
        result = await asyncio.wait_for(runs.result(run_id), 60)
    assert received == [{"email": EMAIL if tool_arguments == "shown" else "[EMAIL]"}]
    assert result["text"] == "It shipped."
    assert EMAIL not in json.dumps(result, default=str)


async def test_a_call_pii_detector_refuses_never_reaches_its_activity(temporal_server: Any) -> None:
    """`PIIDetector(strategy="filter")` flags the call in the model activity; the refusal travels
    in its hook state to the workflow, whose `process_tool_call` rejects it (fail closed: the
    call's shown arguments are cleared anyway)."""
    from tests.processors.guardrails.conftest import routed_detector

    from sluicegate.processors import PIIDetector

    received: list[Any] = []

    async def execute(args: Any, context: Any) -> str:
        received.append(args)
        return "sent"

    def judge(prompt: str) -> dict[str, Any]:
        return (
            {"detections": [{"type": "email", "value": EMAIL, "confidence": 0.9}]} if EMAIL in prompt else {}
        )

    tool = create_tool(id="send", description="Send", input_schema={"type": "object"}, execute=execute)
    agent = Agent(
        "mailer-filter",
        model=MockModel([tool_call_step(("c1", "send", {"to": EMAIL})), text_step("I could not send it.")]),
        tools=[tool],
        output_processors=[PIIDetector(model=routed_detector(judge), strategy="filter")],
    )
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings=FAST)
        run_id = await runs.start(agent, "mail jane")
        out = await runs.observe(agent, run_id)
        chunks = [c async for c in out.full_stream]
        result = await asyncio.wait_for(runs.result(run_id), 60)
    assert received == [] and result["text"] == "I could not send it."
    (denied,) = [c for c in chunks if c.type == "tool-output-denied"]
    assert denied.payload.processor_id == "pii-detector"
    assert EMAIL not in json.dumps(result, default=str)
