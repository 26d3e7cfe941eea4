"""Sub-agents in durable runs, on a real Temporal dev server: the sub-agent runs inside the
parent's tool activity, which hands back what it spent for the workflow to charge."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate import Agent, Sluicegate
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.processors.builtin.cost_guard import CostGuardProcessor
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration

DOLLAR_A_TOKEN = {"input": 1_000_000.0, "output": 1_000_000.0}
PRICING = {"mock-model-id": DOLLAR_A_TOKEN, "sub-model": DOLLAR_A_TOKEN}


def _researcher() -> Agent[Any]:
    """A sub-agent whose one answer costs $2,000 (2,000 tokens at a dollar each)."""
    model = MockModel([text_step("found it", input_tokens=1000, output_tokens=1000)], model_id="sub-model")
    return Agent("researcher", model=model)


def _boss(agent_id: str, guard: CostGuardProcessor) -> Agent[Any]:
    model = MockModel(
        [tool_call_step(("c1", "agent-researcher", {"prompt": "look it up"})), text_step("Done.")]
    )
    return Agent(agent_id, model=model, agents={"researcher": _researcher()}, input_processors=[guard])


async def _run(temporal_server: Any, agents: list[Agent[Any]], body: Any) -> Any:
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    app = Sluicegate(agents={a.id: a for a in agents})
    async with create_worker(client, app, task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings={"heartbeatTimeout": 2, "retryInterval": 0.05})
        return await asyncio.wait_for(body(runs), 60)


async def test_a_sub_agents_spend_is_charged_once_to_the_parents_guards(
    temporal_server: Any, tmp_path: Any
) -> None:
    storage = SQLiteStore(str(tmp_path / "usage.db"))
    spender = _boss(
        "spender", CostGuardProcessor(max_cost=1e9, scope="resource", store=storage, pricing=PRICING)
    )
    capped = _boss("capped", CostGuardProcessor(max_cost=1000.0, scope="run", pricing=PRICING))

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(spender, "go", memory=None, request_context=_owner("u1"))
        result = await runs.result(run_id)
        assert result["text"] == "Done." and result["tripwire"] is None
        # The parent's two calls (15 tokens each) and the sub-agent's one (2,000), once each.
        assert await storage.total("resource:u1", None) == pytest.approx(2030.0)
        # The sub-agent's charge was the run's second reservation, keyed as the others: asked
        # again with its key (a retried store call), the store adds nothing.
        temporal_run = (await runs.client.get_workflow_handle(run_id).describe()).run_id
        again = await storage.reserve(
            "resource:u1",
            2000.0,
            limit=1e12,
            since=None,
            usage={},
            at=datetime.now(UTC),
            idempotency_key=f"{run_id}/{temporal_run}/reserve-2",
        )
        assert again.id is not None
        assert await storage.total("resource:u1", None) == pytest.approx(2030.0)

        # A run budget: the sub-agent's $2,000 passes the $1,000 limit, so the parent's next
        # model call is refused (without the charge it would answer "Done.").
        capped_run = await runs.start(capped, "go")
        stopped = await runs.result(capped_run)
        assert stopped["tripwire"] is not None and "Cost guard" in stopped["tripwire"]["reason"]
        assert stopped["text"] != "Done."

    await _run(temporal_server, [spender, capped], body)


def _owner(resource: str) -> Any:
    from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext

    return RequestContext({RESOURCE_ID_KEY: resource})


def _three_levels(deleted: list[Any], guard: CostGuardProcessor) -> Agent[Any]:
    """boss › researcher › clerk › delete_record, which waits for an approval; the clerk's
    answer costs $2,000, every other call $15."""
    from sluicegate import create_tool

    def delete(args: Any, context: Any) -> str:
        deleted.append(args)
        return "deleted"

    delete_record = create_tool(
        id="delete_record",
        description="Delete a record",
        input_schema={"type": "object", "properties": {"id": {"type": "integer"}}},
        execute=delete,
        require_approval=True,
    )
    clerk_model = MockModel(
        [
            tool_call_step(("d1", "delete_record", {"id": 7})),
            text_step("Deleted record 7.", input_tokens=1000, output_tokens=1000),
        ],
        model_id="sub-model",
    )
    clerk = Agent("clerk", model=clerk_model, tools=[delete_record])
    researcher = Agent(
        "researcher",
        model=MockModel(
            [tool_call_step(("r1", "agent-clerk", {"prompt": "delete 7"})), text_step("The clerk replied.")]
        ),
        agents={"clerk": clerk},
    )
    return Agent(
        "boss",
        model=MockModel(
            [tool_call_step(("b1", "agent-researcher", {"prompt": "get 7 deleted"})), text_step("Done.")]
        ),
        agents={"researcher": researcher},
        input_processors=[guard],
    )


async def test_an_approval_two_levels_down_suspends_the_workflow_and_an_update_resumes_it(
    temporal_server: Any, tmp_path: Any
) -> None:
    deleted: list[Any] = []
    storage = SQLiteStore(str(tmp_path / "usage.db"))
    guard = CostGuardProcessor(max_cost=1e9, scope="resource", store=storage, pricing=PRICING)
    boss = _three_levels(deleted, guard)

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(boss, "delete record 7", request_context=_owner("u1"))
        first = [
            c async for c in (await runs.observe(boss, run_id, request_context=_owner("u1"))).full_stream
        ]
        assert first[-1].type == "tool-call-suspended" and deleted == []
        waiting = first[-1].payload.suspend_payload  # what the card shows: the path to the call
        assert waiting["path"] == "researcher › clerk › delete_record" and waiting["kind"] == "suspend"
        pending = await runs.pending_tool_call(run_id)
        assert pending is not None and pending["toolCallId"] == "b1"
        resumed = await runs.resume_stream(run_id, {"approved": True}, "b1", request_context=_owner("u1"))
        rest = [
            c
            async for c in (
                await runs.observe(boss, run_id, offset=resumed["offset"], request_context=_owner("u1"))
            ).full_stream
        ]
        result = await runs.result(run_id)
        assert deleted == [{"id": 7}]
        results = {c.payload.tool_call_id: c.payload.result for c in rest if c.type == "tool-result"}
        assert results["b1"] == {"text": "The clerk replied."}
        assert result["text"] == "Done." and result["finishReason"] == "stop"
        # Every level's calls once, those made after the approval included: boss 2 x 15,
        # researcher 2 x 15, clerk 15 + 2,000.
        assert await storage.total("resource:u1", None) == pytest.approx(2075.0)

    await _run(temporal_server, [boss], body)


def test_a_worker_warns_of_sub_agent_runs_that_wait_in_one_process(caplog: Any, tmp_path: Any) -> None:
    from sluicegate.durable.temporal.checks import waiting_sub_agents, warn_local_sub_agent_runs

    boss = _three_levels([], CostGuardProcessor(max_cost=1.0))
    clerk = boss.agents["researcher"].agents["clerk"]  # type: ignore[attr-defined]
    assert waiting_sub_agents(boss) == [("researcher › clerk", "delete_record", clerk)]
    with caplog.at_level("WARNING", logger="sluicegate.durable"):
        warn_local_sub_agent_runs(boss)
    assert "sub-agent researcher › clerk" in caplog.text and "'delete_record'" in caplog.text
    caplog.clear()
    clerk.suspended_run_store = SQLiteStore(str(tmp_path / "runs.db"))  # what every worker reaches
    with caplog.at_level("WARNING", logger="sluicegate.durable"):
        warn_local_sub_agent_runs(boss)
    assert "sub-agent" not in caplog.text
