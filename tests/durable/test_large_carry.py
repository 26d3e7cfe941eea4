"""A durable run whose tool results are large: the chunks a model call would carry to the run
log (a `step-finish` repeats every earlier step, so it grows with the square of the steps) go
to the log by themselves once the call is large, instead of pushing the call past Temporal's
payload limit and growing the history at every step."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import uuid
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.durable.temporal.payloads import PAYLOAD_LIMIT
from sluicegate.durable.temporal.workflow_model import CARRY_BUDGET
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration

STEPS = 8
DOCUMENT = 40_000
"""A tool result's size: the old carry passed Temporal's payload limit at step 7."""


@tool
async def fetch(page: int) -> str:
    """A large document."""
    return f"page {page}: " + _noise(page)[:DOCUMENT]


def _noise(seed: int) -> str:
    """Text zlib cannot shrink much (a carry is packed, `packed_chunks`): hashes in base64."""
    blocks = [hashlib.sha512(f"{seed}:{n}".encode()).digest() for n in range(DOCUMENT // 64 + 1)]
    return base64.b64encode(b"".join(blocks)).decode()


async def test_large_tool_results_do_not_push_a_step_past_the_payload_limit(temporal_server: Any) -> None:
    steps = [tool_call_step((f"call_{n}", "fetch", {"page": n})) for n in range(STEPS)]
    agent = Agent("reader", model=MockModel([*steps, text_step("read them all")]), tools=[fetch])
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={"reader": agent}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings={"heartbeatTimeout": 5, "retryInterval": 0.05})
        run_id = await runs.start(agent, "read every page", max_steps=STEPS + 2)
        result = await asyncio.wait_for(runs.result(run_id), 60)
        chunks = [c async for c in (await runs.observe(agent, run_id)).full_stream]
        history = await client.get_workflow_handle(run_id).fetch_history()
    assert result["error"] is None and result["text"] == "read them all"
    # Every step's end reached the log, in order, with the whole run's record.
    finishes = [c for c in chunks if c.type == "step-finish"]
    assert len(finishes) == STEPS + 1
    assert [c.type for c in chunks][-1] == "finish"
    inputs = [
        sum(len(p.data) for p in event.activity_task_scheduled_event_attributes.input.payloads)
        for event in history.events
        if event.activity_task_scheduled_event_attributes.activity_type.name
    ]
    # A call carries chunks only while it is small; what remains is the prompt, which grows by
    # one document a step (the old carry made the 7th call 2.3 MB).
    assert max(inputs) < CARRY_BUDGET + (STEPS + 1) * DOCUMENT * 2 < PAYLOAD_LIMIT
    # Some carries went to the log by themselves (the local publish), besides the run's close.
    publishes = [
        event
        for event in history.events
        if event.HasField("marker_recorded_event_attributes")
        and b'"activity_type":"sluicegate.publish"'
        in event.marker_recorded_event_attributes.details["data"].SerializeToString()
    ]
    assert len(publishes) > 1
