"""A durable run stamps its parts with the workflow's clock (`workflow.time_ns`, installed for
the workflow's context with `sluicegate.clock`): a replay of its history makes the same times,
so the run's messages, as the workflow rebuilds them, are the same on every worker."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

from sluicegate import Agent, Sluicegate, create_tool
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.durable.temporal.workflow import AgentWorkflow
from sluicegate.processors import Processor, ProcessOutputResultArgs
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Stamps(Processor):
    """Notes the times on the run's messages, as the workflow code sees them."""

    id = "stamps"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[Any]] = []

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        self.seen.append(
            [(m.role, part["type"], part.get("createdAt")) for m in args.messages for part in m.content.parts]
            + [(m.role, "message", m.created_at.isoformat()) for m in args.messages]
        )


async def test_a_replay_stamps_the_same_times_from_the_workflow_clock(temporal_server: Any) -> None:
    stamps = Stamps()
    lookup = create_tool(id="lookup", description="look up", execute=lambda args, context: "found")
    model = MockModel([tool_call_step(("c1", "lookup", {})), text_step("done")])
    agent = Agent("clocked", model=model, tools=[lookup], output_processors=[stamps])
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings=FAST)
        run_id = await runs.start(agent, "hi", max_steps=3)
        output = await asyncio.wait_for(runs.result(run_id), 30)
        history = await client.get_workflow_handle(run_id).fetch_history()
    assert output["text"] == "done"
    [live] = stamps.seen
    assert {"step-start", "tool-invocation", "text"} <= {kind for role, kind, _ in live if role != "user"}
    # The messages the run made are dated with the time of a workflow task (the input part, with
    # when the caller's `start` received it).
    task_times = {
        e.event_time.ToNanoseconds() // 1000
        for e in history.events
        if e.HasField("workflow_task_started_event_attributes")
    }
    made = [datetime.fromisoformat(at) for role, kind, at in live if kind == "message" and role != "user"]
    assert made and {(at - EPOCH) // timedelta(microseconds=1) for at in made} <= task_times

    await Replayer(workflows=[AgentWorkflow], workflow_runner=UnsandboxedWorkflowRunner()).replay_workflow(
        history
    )
    assert len(stamps.seen) == 2 and stamps.seen[1] == live
