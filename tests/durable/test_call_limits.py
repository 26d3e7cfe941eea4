"""Call limits, tool retries and refused calls in durable runs on a real Temporal dev server:
thread counters go through the storage activity, a wrapped tool retries inside its activity, a
call refused by `process_tool_call` never reaches its activity."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, ClassVar

import pytest
from temporalio.client import Client

from sluicegate import Agent, Sluicegate, create_tool
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.memory import Memory
from sluicegate.processors import ModelCallLimit, Processor, ProcessToolCallArgs, ToolCallLimit, ToolRetry
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import ToolContext

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}


class WatchedLimit(ModelCallLimit):
    """A model call limit that notes the stores a durable run gives it (`with_store`)."""

    given: ClassVar[list[str]] = []

    def with_store(self, store: Any) -> WatchedLimit:
        self.given.append(type(store).__name__)
        return super().with_store(store)


async def test_thread_limits_and_a_wrapped_tools_retries_hold_in_durable_runs(
    temporal_server: Any, tmp_path: Any
) -> None:
    keys: list[str | None] = []

    async def send(args: Any, context: ToolContext) -> str:
        keys.append(context.idempotency_key)
        if len(keys) == 1:
            raise ConnectionError("reset")
        return "sent"

    storage = SQLiteStore(str(tmp_path / "memory.db"))
    email = ToolRetry(max_retries=2, backoff=0).wrap(
        create_tool(id="send_email", description="send", execute=send)
    )
    model = MockModel(
        [
            tool_call_step(("c1", "send_email", {})),
            text_step("sent it"),
            tool_call_step(("c2", "send_email", {})),
            text_step("cannot send more"),
        ]
    )
    agent = Agent(
        "mailer",
        model=model,
        tools=[email],
        memory=Memory(storage=storage),
        input_processors=[WatchedLimit(thread=4, store=storage)],
        output_processors=[
            ToolCallLimit(limits={"send_email": 1}, scope="thread", store=storage, on_limit="answer")
        ],
    )
    memory = {"thread": "t1", "resource": "u1"}
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"

    async def body(runs: TemporalRuns) -> None:
        one = await runs.result(await runs.start(agent, "send one", memory=memory))
        assert one["text"] == "sent it" and one["tripwire"] is None
        assert len(keys) == 2 and keys[0] == keys[1]  # retried inside the activity, one key
        two = await runs.result(await runs.start(agent, "send another", memory=memory))
        assert two["text"] == "cannot send more" and len(keys) == 2
        three = await runs.result(await runs.start(agent, "and again", memory=memory))
        assert three["tripwire"] is not None and "4 model calls per thread" in three["tripwire"]["reason"]
        assert len(model.calls) == 4
        counts = await storage.call_counts(["tool-calls:2:t1:send_email", "model-calls:2:t1:thread"])
        assert counts == {"tool-calls:2:t1:send_email": 1, "model-calls:2:t1:thread": 4}
        # The workflow's copy counts through the storage activity's stand-in; the agent's own
        # processor keeps the real store.
        assert WatchedLimit.given and set(WatchedLimit.given) == {"DurableSQLiteStore"}
        assert agent.input_processors[0].store is storage

    try:
        async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
            await asyncio.wait_for(body(TemporalRuns(client, task_queue=queue, settings=FAST)), 90)
    finally:
        await storage.close()


async def test_a_refused_call_in_a_durable_run_is_denied_and_the_run_goes_on(temporal_server: Any) -> None:
    ran: list[Any] = []

    async def send(args: Any, context: ToolContext) -> str:
        ran.append(args)
        return "sent"

    class NoExternal(Processor):
        id = "no-external"

        def process_tool_call(self, args: ProcessToolCallArgs) -> None:
            if str(args.args.get("to", "")).endswith("@external.example"):
                return args.reject("external addresses are not allowed; answer without sending")

    email = create_tool(
        id="send_email",
        description="send",
        input_schema={"type": "object", "properties": {"to": {"type": "string"}}},
        execute=send,
    )
    model = MockModel(
        [
            tool_call_step(
                ("c1", "send_email", {"to": "a@external.example"}), ("c2", "send_email", {"to": "b@corp"})
            ),
            text_step("sent to b only"),
        ]
    )
    agent = Agent("refuser", model=model, tools=[email], output_processors=[NoExternal()])
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "send both")
        out = await runs.observe(agent, run_id)
        chunks = [c async for c in out.full_stream]
        result = await runs.result(run_id)
        assert result["text"] == "sent to b only" and result["tripwire"] is None
        assert ran == [{"to": "b@corp"}]
        (denied,) = [c for c in chunks if c.type == "tool-output-denied"]
        assert denied.payload.tool_call_id == "c1" and denied.payload.processor_id == "no-external"
        assert denied.payload.reason.startswith("external addresses are not allowed")
        told = [p for m in model.calls[1].prompt if m["role"] == "tool" for p in m["content"]]
        assert {p["toolCallId"]: p["output"]["type"] for p in told} == {"c1": "error-text", "c2": "text"}

    async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
        await asyncio.wait_for(body(TemporalRuns(client, task_queue=queue, settings=FAST)), 90)
