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


def _three_levels(
    deleted: list[Any], guard: CostGuardProcessor, *, after_approval: bool = False
) -> Agent[Any]:
    """boss › researcher › clerk › delete_record, which waits for an approval; the clerk's
    answer costs $2,000, every other call $15. `after_approval`: the agents as a worker that
    only serves the run after the approval has them (each model's second answer first)."""
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
    skip = 1 if after_approval else 0
    clerk_steps = [
        tool_call_step(("d1", "delete_record", {"id": 7})),
        text_step("Deleted record 7.", input_tokens=1000, output_tokens=1000),
    ]
    clerk = Agent("clerk", model=MockModel(clerk_steps[skip:], model_id="sub-model"), tools=[delete_record])
    researcher_steps = [
        tool_call_step(("r1", "agent-clerk", {"prompt": "delete 7"})),
        text_step("The clerk replied."),
    ]
    researcher = Agent("researcher", model=MockModel(researcher_steps[skip:]), agents={"clerk": clerk})
    boss_steps = [tool_call_step(("b1", "agent-researcher", {"prompt": "get 7 deleted"})), text_step("Done.")]
    return Agent(
        "boss",
        model=MockModel(boss_steps[skip:]),
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
    researcher = boss.agents["researcher"]
    clerk = researcher.agents["clerk"]  # type: ignore[attr-defined]
    path = "researcher › clerk › delete_record"
    # The researcher keeps a waiting run too: its own call waits on the clerk's.
    assert waiting_sub_agents(boss) == [(path, researcher), (path, clerk)]
    with caplog.at_level("WARNING", logger="sluicegate.durable"):
        warn_local_sub_agent_runs(boss)
    assert "sub-agent 'researcher'" in caplog.text and "sub-agent 'clerk'" in caplog.text
    assert path in caplog.text
    caplog.clear()
    shared = SQLiteStore(str(tmp_path / "runs.db"))  # what every worker reaches
    researcher.suspended_run_store = clerk.suspended_run_store = shared  # type: ignore[attr-defined]
    with caplog.at_level("WARNING", logger="sluicegate.durable"):
        warn_local_sub_agent_runs(boss)
    assert "sub-agent" not in caplog.text


async def test_declining_two_levels_down_on_temporal_runs_nothing(temporal_server: Any) -> None:
    deleted: list[Any] = []
    boss = _three_levels(deleted, CostGuardProcessor(max_cost=1e9, pricing=PRICING))

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(boss, "delete record 7")
        first = [c async for c in (await runs.observe(boss, run_id)).full_stream]
        assert first[-1].type == "tool-call-suspended"
        await runs.resume_stream(run_id, {"approved": False, "reason": "keep it"}, "b1")
        result = await runs.result(run_id)
        assert deleted == [] and result["text"] == "Done." and result["finishReason"] == "stop"
        # The sub-agents went on with the refusal (the call is not an error of the parent's).
        tool_results = [r for step in result["steps"] for r in step["toolResults"]]
        assert tool_results[-1]["payload"]["result"] == {"text": "The clerk replied."}

    await _run(temporal_server, [boss], body)


async def test_a_waiting_sub_agent_run_in_a_shared_store_resumes_on_another_worker(
    temporal_server: Any, tmp_path: Any
) -> None:
    """The worker that ran the run up to the approval is gone; a fresh one (new agent objects,
    the same application) takes the decision: the sub-agents' waiting runs come from the store
    both reach, and the budget is charged once."""
    storage = SQLiteStore(str(tmp_path / "shared.db"))

    def app(deleted: list[Any], *, after_approval: bool) -> Agent[Any]:
        guard = CostGuardProcessor(max_cost=1e9, scope="resource", store=storage, pricing=PRICING)
        boss = _three_levels(deleted, guard, after_approval=after_approval)
        researcher = boss.agents["researcher"]
        researcher.suspended_run_store = storage  # type: ignore[attr-defined]
        researcher.agents["clerk"].suspended_run_store = storage  # type: ignore[attr-defined]
        return boss

    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    settings = {"heartbeatTimeout": 2, "retryInterval": 0.05}
    before: list[Any] = []
    first = app(before, after_approval=False)
    runs = TemporalRuns(client, task_queue=queue, settings=settings)
    async with create_worker(client, Sluicegate(agents={"boss": first}), task_queue=queue):
        run_id = await runs.start(first, "delete record 7", request_context=_owner("u1"))
        for _ in range(400):
            output = await runs.output(run_id)
            if output is not None:
                break
            await asyncio.sleep(0.025)
        assert output is not None and output["finishReason"] == "suspended" and before == []
    after: list[Any] = []
    second = app(after, after_approval=True)
    async with create_worker(client, Sluicegate(agents={"boss": second}), task_queue=queue):
        await runs.resume_stream(run_id, {"approved": True}, "b1", request_context=_owner("u1"))
        result = await asyncio.wait_for(runs.result(run_id), 60)
    assert after == [{"id": 7}] and before == []
    assert result["text"] == "Done." and result["finishReason"] == "stop"
    tool_results = [r for step in result["steps"] for r in step["toolResults"]]
    assert tool_results[-1]["payload"]["result"] == {"text": "The clerk replied."}
    assert await storage.total("resource:u1", None) == pytest.approx(2075.0)


async def test_what_a_tool_activity_spent_is_summed_per_model() -> None:
    from sluicegate.budget import USAGE_SINKS_KEY, usage_sinks
    from sluicegate.durable.temporal.spend import collect
    from sluicegate.request_context import RequestContext
    from sluicegate.stream.usage import Usage

    context = RequestContext({USAGE_SINKS_KEY: "a client's value"})
    spent = collect(context)
    (sink,) = usage_sinks(context.get(USAGE_SINKS_KEY))
    for _ in range(1000):  # a sub-agent's many calls: the result stays one entry per model
        await sink.charge("openai/gpt-4o", Usage(10, 5))
    await sink.charge("anthropic/claude-sonnet-4", Usage(1, 2))
    await sink.charge("openai/gpt-4o", Usage.from_v2({"inputTokens": -5}))  # unusable: left out
    assert spent.entries() == [
        {
            "model": "openai/gpt-4o",
            "usage": {"inputTokens": 10_000, "outputTokens": 5_000, "totalTokens": 15_000},
        },
        {
            "model": "anthropic/claude-sonnet-4",
            "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
        },
    ]


def test_the_worker_check_ends_on_a_cycle_of_sub_agents() -> None:
    from sluicegate.durable.temporal.checks import waiting_sub_agents

    boss = _three_levels([], CostGuardProcessor(max_cost=1.0))
    clerk = boss.agents["researcher"].agents["clerk"]  # type: ignore[attr-defined]
    clerk.agents["boss"] = boss  # a cycle made after construction
    assert ("researcher › clerk › delete_record", clerk) in waiting_sub_agents(boss)


async def test_an_approval_two_levels_down_round_trips_over_the_temporal_routes(
    temporal_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sluicegate serve --temporal`: the stream ends with the parent's suspension naming the
    path, and `resume-stream` with the decision streams the rest of the run."""
    import json

    import httpx

    from sluicegate.server.app import create_app
    from sluicegate.server.settings import ServerSettings

    deleted: list[Any] = []
    boss = _three_levels(deleted, CostGuardProcessor(max_cost=1e9, pricing=PRICING))
    app = Sluicegate(agents={"boss": boss})
    queue = f"q-{uuid.uuid4()}"
    monkeypatch.setenv("SLUICEGATE_TEMPORAL", temporal_server.target)
    monkeypatch.setenv("SLUICEGATE_TEMPORAL_TASK_QUEUE", queue)
    server = create_app(app, ServerSettings())
    client = await Client.connect(temporal_server.target)

    def chunks(body: str) -> list[dict[str, Any]]:
        return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]

    transport = httpx.ASGITransport(app=server)
    async with (
        create_worker(client, app, task_queue=queue),
        httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as http,
    ):
        first = await http.post("/api/agents/boss/stream", json={"messages": "delete record 7"})
        assert first.status_code == 200, first.text
        last = chunks(first.text)[-1]
        assert last["type"] == "tool-call-suspended"
        assert last["payload"]["suspendPayload"]["path"] == "researcher › clerk › delete_record"
        run_id = last["runId"]
        resumed = await http.post(
            "/api/agents/boss/resume-stream",
            json={"runId": run_id, "toolCallId": "b1", "resumeData": {"approved": True}},
        )
        assert resumed.status_code == 200, resumed.text
        rest = chunks(resumed.text)
    assert deleted == [{"id": 7}]
    assert "".join(c["payload"]["text"] for c in rest if c["type"] == "text-delta") == "Done."
    assert rest[-1]["type"] == "finish"


class _SlowFirst:
    """A sub-agent model whose first call hangs past the tool activity's timeout (the attempt
    is abandoned, as a dead worker's would be); the next answers at once, for $2,000."""

    specification_version = "v2"
    provider = "mock-provider"
    model_id = "sub-model"

    def __init__(self) -> None:
        self.calls = 0
        self.inner = MockModel(
            [text_step("found it", input_tokens=1000, output_tokens=1000)], model_id="sub-model"
        )

    async def do_stream(self, options: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            await asyncio.sleep(30)
        return await self.inner.do_stream(options)

    async def do_generate(self, options: Any) -> Any:
        raise NotImplementedError


async def test_a_retried_sub_agent_activity_is_charged_once(temporal_server: Any, tmp_path: Any) -> None:
    storage = SQLiteStore(str(tmp_path / "usage.db"))
    slow = _SlowFirst()
    guard = CostGuardProcessor(max_cost=1e9, scope="resource", store=storage, pricing=PRICING)
    model = MockModel(
        [tool_call_step(("c1", "agent-researcher", {"prompt": "look it up"})), text_step("Done.")]
    )
    boss = Agent(
        "boss", model=model, agents={"researcher": Agent("researcher", model=slow)}, input_processors=[guard]
    )
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    settings = {"heartbeatTimeout": 2, "retryInterval": 0.05, "toolTimeout": 1, "toolAttempts": 3}
    async with create_worker(client, Sluicegate(agents={"boss": boss}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings=settings)
        run_id = await runs.start(boss, "go", request_context=_owner("u1"))
        result = await asyncio.wait_for(runs.result(run_id), 60)
    assert slow.calls == 2  # the first attempt timed out, the second answered
    assert result["text"] == "Done."
    assert await storage.total("resource:u1", None) == pytest.approx(2030.0)
