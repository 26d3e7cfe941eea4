"""A durable run's chunks travel to the run log as JSON text, one string each (`Outbox.encode`):
the activity that writes them neither decodes them nor builds a tree of objects per chunk for
the log to keep, and readers get the same chunks. A run `TemporalRuns.start` starts says so in
its input (`names.RUN_FORMAT`), at no patch marker's cost; a run started without it (an older
client) asks the patches (`ENCODED_CHUNKS`, `OPEN_WITH_FIRST_WRITE`). From `names.PACKED_FORMAT`
on, the chunks an activity carries travel packed; a run of an earlier format carries them as
they are."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate import Agent, Sluicegate, create_tool
from sluicegate.durable.temporal import TemporalRuns, create_worker, names
from sluicegate.durable.temporal.packed_chunks import carried_texts
from sluicegate.durable.temporal.workflow_model import ENCODED_CHUNKS, OPEN_WITH_FIRST_WRITE
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration


async def test_the_workflows_chunks_reach_the_log_as_text_and_read_back_as_in_process(
    temporal_server: Any,
) -> None:
    lookup = create_tool(id="lookup", description="look up", execute=lambda args, context: "found")
    steps = [tool_call_step(("c1", "lookup", {})), text_step("done")]
    agent = Agent("encoded", model=MockModel(steps), tools=[lookup])
    local = Agent("encoded", model=MockModel(steps), tools=[lookup])
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings={"heartbeatTimeout": 5, "retryInterval": 0.05})
        run_id = await runs.start(agent, "hi", max_steps=3)
        assert (await asyncio.wait_for(runs.result(run_id), 30))["text"] == "done"
        durable = [c async for c in (await runs.observe(agent, run_id)).full_stream]
        history = await client.get_workflow_handle(run_id).fetch_history()
    in_process = [c async for c in (await local.stream("hi", max_steps=3)).full_stream]
    assert [c.type for c in durable] == [c.type for c in in_process]
    finishes = [c for c in durable if c.type == "step-finish"]
    assert len(finishes) == 2 and len(finishes[1].payload.output.steps) == 2

    markers = [
        e
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
        and e.marker_recorded_event_attributes.marker_name == "core_patch"
    ]
    upserts = [e for e in history.events if e.HasField("upsert_workflow_search_attributes_event_attributes")]
    assert markers == [] and upserts == []  # the input says how the run goes, not patches
    carries = [
        json.loads(event.activity_task_scheduled_event_attributes.input.payloads[0].data)["carry"]
        for event in history.events
        if event.activity_task_scheduled_event_attributes.activity_type.name
    ]
    # The long carries travel packed (`names.PACKED_FORMAT`): the one with the first step-finish.
    assert any("packed" in carry and "chunks" not in carry for carry in carries)
    texts = [chunk for carry in carries for chunk in carried_texts(carry)]
    assert texts and all(isinstance(chunk, str) for chunk in texts)
    assert "step-finish" in {json.loads(chunk)["type"] for chunk in texts}


async def test_a_run_of_the_text_format_carries_its_chunks_unpacked(temporal_server: Any) -> None:
    """A run an earlier client started (`names.TEXT_FORMAT`) keeps its format on this worker."""
    lookup = create_tool(id="lookup", description="look up", execute=lambda args, context: "x" * 2000)
    agent = Agent(
        "text-format",
        model=MockModel([tool_call_step(("c1", "lookup", {})), text_step("done")]),
        tools=[lookup],
    )
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
        start = {
            "agentId": agent.id,
            "messages": "hi",
            "settings": {"heartbeatTimeout": 5, "retryInterval": 0.05},
            names.FORMAT: names.TEXT_FORMAT,
        }
        run_id = f"text-{uuid.uuid4()}"
        handle = await client.start_workflow(names.WORKFLOW, start, id=run_id, task_queue=queue)
        assert (await asyncio.wait_for(handle.result(), 30))["text"] == "done"
        chunks = [
            c async for c in (await TemporalRuns(client, task_queue=queue).observe(agent, run_id)).full_stream
        ]
        history = await handle.fetch_history()
    carried = _carried(history)
    assert sum(map(len, carried)) > 2000  # long enough to be packed in a run of the current format
    assert all(isinstance(chunk, str) for chunk in carried)
    result = next(c for c in chunks if c.type == "tool-result")
    assert result.payload.result == "x" * 2000 and chunks[-1].type == "finish"


def _carried(history: Any) -> list[Any]:
    return [
        chunk
        for event in history.events
        if event.activity_task_scheduled_event_attributes.activity_type.name.endswith(".model")
        for chunk in json.loads(event.activity_task_scheduled_event_attributes.input.payloads[0].data)[
            "carry"
        ]["chunks"]
    ]


async def test_a_run_started_without_a_format_asks_the_patches(temporal_server: Any) -> None:
    lookup = create_tool(id="lookup", description="look up", execute=lambda args, context: "found")
    agent = Agent(
        "older", model=MockModel([tool_call_step(("c1", "lookup", {})), text_step("done")]), tools=[lookup]
    )
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
        run_id = f"older-{uuid.uuid4()}"
        start = {
            "agentId": agent.id,
            "messages": "hi",
            "settings": {"heartbeatTimeout": 5, "retryInterval": 0.05},
        }
        handle = await client.start_workflow(names.WORKFLOW, start, id=run_id, task_queue=queue)
        assert (await asyncio.wait_for(handle.result(), 30))["text"] == "done"
        runs = TemporalRuns(client, task_queue=queue)
        chunks = [c.type async for c in (await runs.observe(agent, run_id)).full_stream]
        history = await handle.fetch_history()
    assert chunks[0] == "start" and chunks[-1] == "finish"
    patches = b"".join(
        p.data
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
        for p in e.marker_recorded_event_attributes.details["patch-data"].payloads
    )
    assert ENCODED_CHUNKS.encode() in patches and OPEN_WITH_FIRST_WRITE.encode() in patches
    assert _carried(history) and all(isinstance(chunk, str) for chunk in _carried(history))
