"""Durable runs on a real Temporal dev server, with the worker in this process."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import PayloadTooLargeError, TemporalRuns, create_worker, names
from sluicegate.errors import APICallError, InvalidInputError
from sluicegate.models.base import CallOptions, StreamResult
from sluicegate.processors import Processor, ProcessOutputStreamArgs
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.storage.errors import SuspendedRunNotFoundError
from sluicegate.stream.chunk import Chunk, text_delta
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import ToolContext

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}


class ScriptedStream:
    """A model whose calls are async generator functions, so a test can pause or fail a stream."""

    specification_version = "v2"
    provider = "scripted"
    model_id = "stream"

    def __init__(self, *calls: Any) -> None:
        self.calls = list(calls)
        self.count = 0

    async def do_stream(self, options: CallOptions) -> StreamResult:
        script = self.calls[min(self.count, len(self.calls) - 1)]
        self.count += 1
        return StreamResult(script())

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError


def _text(*pieces: str) -> list[dict[str, Any]]:
    return [
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": p} for p in pieces),
        {"type": "text-end", "id": "t"},
    ]


_FINISH = {
    "type": "finish",
    "finishReason": "stop",
    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
}


async def _run(temporal_server: Any, agents: list[Agent[Any]], body: Any, **settings: Any) -> Any:
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    app = Sluicegate(agents={a.id: a for a in agents})
    async with create_worker(client, app, task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings={**FAST, **settings})
        return await asyncio.wait_for(body(runs), 60)


async def _chunks(runs: TemporalRuns, agent: Agent[Any], run_id: str, offset: int = 0) -> list[Chunk[Any]]:
    out = await runs.observe(agent, run_id, offset=offset)
    return [c async for c in out.full_stream]


async def _activity_types(runs: TemporalRuns, run_id: str) -> set[str]:
    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    return {
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    }


async def _local_activity_types(runs: TemporalRuns, run_id: str) -> set[str]:
    """The local activities the run recorded (their markers name them)."""
    from temporalio.api.common.v1 import Payloads

    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    out: set[str] = set()
    for e in history.events:
        if e.HasField("marker_recorded_event_attributes"):
            details = e.marker_recorded_event_attributes.details
            if "data" in details:
                payloads = Payloads()
                payloads.CopyFrom(details["data"])
                for payload in payloads.payloads:
                    data = json.loads(payload.data)
                    if isinstance(data, dict) and "activity_type" in data:
                        out.add(data["activity_type"])
    return out


def test_activity_names_are_stable() -> None:
    assert names.model_activity("support") == "sluicegate.support.model"
    assert names.tool_activity("support", "refund") == "sluicegate.support.tool.refund"
    assert names.WORKFLOW == "sluicegate.agent"


async def test_run_with_a_tool_completes_and_streams(temporal_server: Any) -> None:
    keys: list[str | None] = []

    @tool
    async def add(a: int, b: int, context: ToolContext) -> int:
        """Add two numbers."""
        keys.append(context.idempotency_key)
        return a + b

    model = MockModel([tool_call_step(("c1", "add", {"a": 1, "b": 2})), text_step("the sum is 3")])
    agent = Agent("calc", model=model, tools=[add])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "what is 1+2?")
        chunks = await _chunks(runs, agent, run_id)
        result = await runs.result(run_id)
        assert result["text"] == "the sum is 3"
        assert result["finishReason"] == "stop"
        assert keys == [f"{run_id}:c1"]
        kinds = [c.type for c in chunks]
        assert await _activity_types(runs, run_id) == {"sluicegate.calc.model", "sluicegate.calc.tool.add"}
        assert kinds[0] == "start" and kinds[-1] == "finish"
        assert "tool-result" in kinds and "text-delta" in kinds
        results = [c for c in chunks if c.type == "tool-result"]
        assert results[0].payload.result == 3
        # Offsets are dense: each chunk once, in order.
        assert kinds.count("finish") == 1 and kinds.count("start") == 1
        roles = [m["role"] for m in result["messages"]]
        assert roles == ["user", "assistant", "assistant"] or roles.count("assistant") >= 1

    await _run(temporal_server, [agent], body)


async def test_text_is_published_while_the_model_activity_runs(temporal_server: Any) -> None:
    release = asyncio.Event()

    async def slow() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "text-start", "id": "t"}
        yield {"type": "text-delta", "id": "t", "delta": "first "}
        await asyncio.wait_for(release.wait(), 20)  # only a live reader can set it
        yield {"type": "text-delta", "id": "t", "delta": "second"}
        yield {"type": "text-end", "id": "t"}
        yield _FINISH

    agent = Agent("live", model=ScriptedStream(slow))

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        out = await runs.observe(agent, run_id)
        texts = []
        async for chunk in out.full_stream:
            if chunk.type == "text-delta":
                texts.append(chunk.payload.text)
                release.set()
        assert texts == ["first ", "second"]
        assert (await runs.result(run_id))["text"] == "first second"

    await _run(temporal_server, [agent], body)


class HoldAll(Processor):
    """Holds every text delta until the step ends (the hold-back contract)."""

    id = "hold-all"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk[Any] | None:
        part = args.part
        if part.type != "text-delta":
            return part
        args.state["held"] = args.state.get("held", "") + part.payload.text
        args.state["ids"] = [part.run_id, part.payload.id]
        return None

    def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk[Any]]:
        held = args.state.pop("held", "")
        if not held:
            return []
        run_id, text_id = args.state["ids"]
        return [text_delta(run_id, text_id, held.upper())]


def _failing_then(text: str, *, held_first: bool = False) -> ScriptedStream:
    async def fails() -> AsyncIterator[dict[str, Any]]:
        for part in _text("broken ", "attempt"):
            if part["type"] == "text-end":
                break
            yield part
        raise APICallError("overloaded", status_code=503, is_retryable=True)

    async def works() -> AsyncIterator[dict[str, Any]]:
        for part in _text(text):
            yield part
        yield _FINISH

    return ScriptedStream(fails, works)


async def test_a_retried_model_call_announces_itself_before_its_new_text(temporal_server: Any) -> None:
    model = _failing_then("good answer")
    agent = Agent("retried", model=model)

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        result = await runs.result(run_id)
        chunks = await _chunks(runs, agent, run_id)
        kinds = [c.type for c in chunks]
        texts = [c.payload.text for c in chunks if c.type == "text-delta"]
        assert result["text"] == "good answer"
        assert model.count == 2
        notice = kinds.index(names.RETRY_NOTICE)
        assert texts == ["broken ", "attempt", "good answer"]
        first_new = max(i for i, c in enumerate(chunks) if c.type == "text-delta")
        assert notice < first_new
        data = chunks[notice].data
        assert data["attempt"] == 2 and data["stepNumber"] == 0

    await _run(temporal_server, [agent], body)


async def test_held_back_text_of_a_failed_attempt_is_never_released(temporal_server: Any) -> None:
    model = _failing_then("good answer")
    agent = Agent("held", model=model, output_processors=[HoldAll()])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        result = await runs.result(run_id)
        chunks = await _chunks(runs, agent, run_id)
        texts = [c.payload.text for c in chunks if c.type == "text-delta"]
        assert texts == ["GOOD ANSWER"]
        assert result["text"] == "GOOD ANSWER"
        kinds = [c.type for c in chunks]
        # The failed attempt showed its text-start only; the notice still precedes the new text.
        assert kinds.index(names.RETRY_NOTICE) < kinds.index("text-delta")

    await _run(temporal_server, [agent], body)


class Blocker(Processor):
    id = "blocker"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk[Any] | None:
        if args.part.type == "text-delta" and "forbidden" in args.part.payload.text:
            args.abort("forbidden text")
        return args.part


async def test_a_tripwire_in_the_stream_is_not_retried(temporal_server: Any) -> None:
    model = MockModel([text_step("forbidden words")])
    agent = Agent("guarded", model=model, output_processors=[Blocker()])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        result = await runs.result(run_id)
        assert result["tripwire"]["reason"] == "forbidden text"
        assert len(model.calls) == 1
        chunks = await _chunks(runs, agent, run_id)
        assert chunks[-1].type == "tripwire"

    await _run(temporal_server, [agent], body)


async def test_a_non_retryable_provider_error_is_not_retried(temporal_server: Any) -> None:
    model = MockModel([APICallError("bad request", status_code=400, is_retryable=False)])
    agent = Agent("refused", model=model)

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        result = await runs.result(run_id)
        assert result["finishReason"] == "error"
        assert len(model.calls) == 1

    await _run(temporal_server, [agent], body)


@pytest.mark.parametrize("details", [False, True])
async def test_a_provider_errors_own_text_crosses_only_when_the_agent_opts_in(
    temporal_server: Any, details: bool
) -> None:
    """The activity's failure is kept in Temporal's history: the provider's text goes there
    only with `provider_error_details`, as it leaves the process only then in one process."""
    model = MockModel([APICallError("account acme-7 over quota", status_code=400, is_retryable=False)])
    agent = Agent(f"refused-{details}", model=model, provider_error_details=details)

    async def body(runs: TemporalRuns) -> list[Chunk[Any]]:
        run_id = await runs.start(agent, "hi")
        await runs.result(run_id)
        return await _chunks(runs, agent, run_id)

    chunks = await _run(temporal_server, [agent], body)
    error = next(c for c in chunks if c.type == "error").payload.error  # as the run log keeps it
    assert error["statusCode"] == 400
    assert ("account acme-7 over quota" in error["message"]) is details


async def test_a_retryable_provider_error_is_retried_by_temporal_not_the_client(temporal_server: Any) -> None:
    model = MockModel(
        [APICallError("overloaded", status_code=503, is_retryable=True)] * 2 + [text_step("fine")]
    )
    agent = Agent("flaky", model=model, max_retries=5)

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        assert (await runs.result(run_id))["text"] == "fine"
        assert len(model.calls) == 3

    await _run(temporal_server, [agent], body, modelAttempts=3)


async def test_an_oversized_input_is_refused_naming_it(temporal_server: Any) -> None:
    agent = Agent("big", model=MockModel([text_step("x")]), max_input_chars=10_000_000)

    async def body(runs: TemporalRuns) -> None:
        with pytest.raises(PayloadTooLargeError, match="the run's input"):
            await runs.start(agent, "x" * 3_000_000)

    await _run(temporal_server, [agent], body)


async def test_an_oversized_tool_result_fails_the_call_naming_it(temporal_server: Any) -> None:
    @tool
    async def dump() -> str:
        """A huge result."""
        return "y" * 3_000_000

    model = MockModel([tool_call_step(("c1", "dump", {})), text_step("done")])
    agent = Agent("dumper", model=model, tools=[dump])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        chunks = await _chunks(runs, agent, run_id)
        errors = [c for c in chunks if c.type == "tool-error"]
        assert errors and "Temporal accepts at most" in str(errors[0].to_dict()["payload"]["error"])

    await _run(temporal_server, [agent], body)


async def test_approval_is_a_validated_update(temporal_server: Any) -> None:
    ran: list[str] = []

    @tool
    async def refund(amount: int) -> str:
        """Refund money."""
        ran.append("refund")
        return f"refunded {amount}"

    model = MockModel([tool_call_step(("c1", "refund", {"amount": 5})), text_step("refunded")])
    agent = Agent("shop", model=model, tools=[refund])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "refund me", require_tool_approval=True)
        first = await _chunks(runs, agent, run_id)
        assert first[-1].type == "tool-call-approval"
        assert await runs.pending_tool_call(run_id) == {
            "toolCallId": "c1",
            "toolName": "refund",
            "kind": "approval",
            "args": {"amount": 5},
            "resourceId": None,
        }
        with pytest.raises(SuspendedRunNotFoundError):  # no such run
            await runs.approve_tool_call(f"no-{run_id}", "c1")
        with pytest.raises(SuspendedRunNotFoundError):  # another resource's caller
            await runs.approve_tool_call(
                run_id, "c1", request_context=RequestContext({RESOURCE_ID_KEY: "mallory"})
            )
        with pytest.raises(InvalidInputError, match="not the pending one"):
            await runs.approve_tool_call(run_id, "c-unknown")
        with pytest.raises(InvalidInputError, match="waits for an approval"):
            await runs.resume_stream(run_id, {"x": 1})
        assert ran == []
        resumed = await runs.approve_tool_call(run_id, "c1")
        rest = await _chunks(runs, agent, run_id, offset=resumed["offset"])
        result = await runs.result(run_id)
        assert ran == ["refund"]
        assert result["text"] == "refunded"
        assert [c.type for c in rest][-1] == "finish"

    await _run(temporal_server, [agent], body)


async def test_declining_runs_nothing(temporal_server: Any) -> None:
    ran: list[str] = []

    @tool
    async def delete() -> str:
        """Delete everything."""
        ran.append("delete")
        return "deleted"

    model = MockModel([tool_call_step(("c1", "delete", {})), text_step("not deleted")])
    agent = Agent("ops", model=model, tools=[delete])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "delete", require_tool_approval=True)
        await _chunks(runs, agent, run_id)
        await runs.decline_tool_call(run_id, "c1", "no")
        result = await runs.result(run_id)
        assert ran == [] and result["text"] == "not deleted"

    await _run(temporal_server, [agent], body)


def test_unknown_settings_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="heartbeat"):
        TemporalRuns(None, settings={"heartbeat": 1})  # type: ignore[arg-type]


async def test_memory_and_budget_go_through_storage_activities(temporal_server: Any, tmp_path: Any) -> None:
    from sluicegate.memory import Memory
    from sluicegate.processors.builtin.cost_guard import CostGuardProcessor
    from sluicegate.storage import SQLiteStore

    storage = SQLiteStore(str(tmp_path / "memory.db"))
    guard = CostGuardProcessor(
        max_cost=100.0,
        scope="resource",
        store=storage,
        pricing={"mock-model-id": {"input": 1_000_000.0, "output": 1_000_000.0}},
    )
    model = MockModel([text_step("first answer"), text_step("second answer")])
    agent = Agent("remembering", model=model, memory=Memory(storage=storage), input_processors=[guard])
    memory = {"thread": "t1", "resource": "u1"}

    async def body(runs: TemporalRuns) -> None:
        first = await runs.start(agent, "one", memory=memory)
        one = await runs.result(first)
        assert one["text"] == "first answer"
        second = await runs.start(agent, "two", memory=memory)
        two = await runs.result(second)
        assert two["text"] == "second answer"
        # The second call saw the first exchange (history loaded through the storage activity).
        prompt_texts = [str(m) for m in model.calls[1].prompt]
        assert any("first answer" in t for t in prompt_texts)
        stored = await storage.list_messages("t1")
        assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
        # Each call reserved and settled once: the spend is the priced usage of two calls.
        spent = await storage.total("resource:u1", None)
        priced = sum(r["usage"]["inputTokens"] + r["usage"]["outputTokens"] for r in (one, two))
        assert priced > 0
        assert spent == pytest.approx(priced)
        # The run's first reservation carried its idempotency key: asked again with it, the
        # store answers that reservation (decided on a spend of 0) and adds nothing.
        temporal_run = (await runs.client.get_workflow_handle(first).describe()).run_id
        again = await storage.reserve(
            "resource:u1",
            1.0,
            limit=1e9,
            since=None,
            usage={},
            at=datetime.now(UTC),
            idempotency_key=f"{first}/{temporal_run}/reserve-1",
        )
        assert again.id is not None and again.spent == 0.0
        assert await storage.total("resource:u1", None) == pytest.approx(priced)
        # ... and the store was reached only through the storage activity, named as documented.
        assert "sluicegate.remembering.storage" in await _local_activity_types(runs, second)
        # No hook timeout became a Temporal timer: whether one is recorded would depend on
        # timing, and a replay on another worker must make the same commands.
        history = await runs.client.get_workflow_handle(second).fetch_history()
        assert not [e for e in history.events if e.HasField("timer_started_event_attributes")]

    await _run(temporal_server, [agent], body)


async def test_a_warning_budget_over_a_resource_runs_durably(temporal_server: Any, tmp_path: Any) -> None:
    """A `strategy="warn"` guard reserves with no limit; the reservation crosses the workflow
    boundary as JSON, which has no infinity."""
    from sluicegate.processors.builtin.cost_guard import CostGuardProcessor
    from sluicegate.storage import SQLiteStore

    storage = SQLiteStore(str(tmp_path / "usage.db"))
    seen: list[Any] = []
    guard = CostGuardProcessor(
        max_cost=1.0,
        scope="resource",
        store=storage,
        strategy="warn",
        on_violation=seen.append,
        pricing={"mock-model-id": {"input": 1_000_000.0, "output": 1_000_000.0}},
    )
    agent = Agent(
        "warned", model=MockModel([text_step("over budget, still answered")]), input_processors=[guard]
    )

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi", request_context=RequestContext({RESOURCE_ID_KEY: "u1"}))
        result = await runs.result(run_id)
        assert result["text"] == "over budget, still answered" and result["error"] is None
        assert await storage.total("resource:u1", None) == pytest.approx(15.0)

    await _run(temporal_server, [agent], body)


async def test_durable_memory_options_are_checked(temporal_server: Any) -> None:
    agent = Agent("forgetful", model=MockModel([text_step("x")]))

    async def body(runs: TemporalRuns) -> None:
        with pytest.raises(InvalidInputError, match="has no memory"):
            await runs.start(agent, "hi", memory={"thread": "t", "resource": "r"})

    await _run(temporal_server, [agent], body)


class _Shouting(Processor):
    id = "shouting"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
        chunk = args.part
        if chunk.type != "text-delta":
            return chunk
        return text_delta(chunk.run_id, chunk.payload.id, chunk.payload.text.upper())


class _Ledger:
    async def spend(self, amount: int) -> None:
        return None


class _Keeping(Processor):
    """A processor with a store (its calls would be activities)."""

    id = "keeping"

    def __init__(self) -> None:
        self.store = _Ledger()

    def process_input(self, args: Any) -> Any:
        return args.messages


async def test_processor_arrays_given_as_functions_run_with_the_request_context(temporal_server: Any) -> None:
    """The function is called per run with the run's request context, as in one process."""
    agent = Agent(
        "dynamic",
        model=MockModel([text_step("quiet please")]),
        output_processors=lambda context: [_Shouting()] if context.get("loud") else [],
    )

    async def body(runs: TemporalRuns) -> dict[str, Any]:
        run_id = await runs.start(agent, "hi", request_context=RequestContext({"loud": True}))
        return await runs.result(run_id)

    result = await _run(temporal_server, [agent], body)
    assert result["text"] == "QUIET PLEASE"


async def test_a_function_returning_a_processor_with_a_store_fails_the_run_naming_it(
    temporal_server: Any,
) -> None:
    """Its store's calls need activities a worker registers at its start, for listed
    processors only: the run fails (it does not retry its workflow task forever)."""
    from temporalio.client import WorkflowFailureError

    agent = Agent(
        "dynamic-store", model=MockModel([text_step("x")]), input_processors=lambda context: [_Keeping()]
    )

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        with pytest.raises(WorkflowFailureError) as failure:
            await runs.result(run_id)
        assert "'keeping'" in str(failure.value.cause) and "list it" in str(failure.value.cause)

    await _run(temporal_server, [agent], body)


@pytest.mark.parametrize("bad", [0, -1, 121, "5", True, float("nan")])
def test_a_workflow_task_timeout_that_is_not_seconds_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="workflowTaskTimeout"):
        TemporalRuns(None, settings={"workflowTaskTimeout": bad})  # type: ignore[arg-type]


async def _markers(runs: TemporalRuns, run_id: str) -> list[str]:
    """The local activities the run recorded, in order, one per call."""
    from temporalio.api.common.v1 import Payloads

    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    out: list[str] = []
    for e in history.events:
        details = e.marker_recorded_event_attributes.details
        if e.HasField("marker_recorded_event_attributes") and "data" in details:
            payloads = Payloads()
            payloads.CopyFrom(details["data"])
            out.extend(
                data["activity_type"]
                for data in (json.loads(p.data) for p in payloads.payloads)
                if isinstance(data, dict) and "activity_type" in data
            )
    return out


async def test_the_workflows_chunks_travel_with_the_next_activity(temporal_server: Any) -> None:
    """No round trip of their own: a run with two tool steps records one local activity, the
    closing `publish` (its first model call opens the log: no `open-run`), and its stream is the
    in-process run's, chunk for chunk."""

    @tool
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    steps = [
        tool_call_step(("c1", "add", {"a": 1, "b": 2})),
        tool_call_step(("c2", "add", {"a": 3, "b": 4})),
        text_step("3 and 7"),
    ]
    local = Agent("carry", model=MockModel(steps), tools=[add])
    expected = [c.type async for c in (await local.stream("sum")).full_stream]
    agent = Agent("carry", model=MockModel(steps), tools=[add])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "sum")
        chunks = await _chunks(runs, agent, run_id)
        assert (await runs.result(run_id))["text"] == "3 and 7"
        assert [c.type for c in chunks] == expected
        assert await _markers(runs, run_id) == [names.PUBLISH]

    await _run(temporal_server, [agent], body)


async def test_chunks_of_a_call_that_failed_before_writing_them_still_reach_the_log(
    temporal_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from temporalio.exceptions import ApplicationError

    from sluicegate.durable.temporal.activities import DurableActivities

    async def fail(self: Any, agent_id: str, call: dict[str, Any]) -> None:
        raise ApplicationError("the worker lost its log connection", non_retryable=True)

    monkeypatch.setattr(DurableActivities, "_write_carried", fail)
    agent = Agent("lost", model=MockModel([text_step("never")]))

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        chunks = await _chunks(runs, agent, run_id)
        assert (await runs.result(run_id))["finishReason"] == "error"
        kinds = [c.type for c in chunks]
        # The start and step-start the model call carried, then the error: each once, in order.
        assert kinds[:2] == ["start", "step-start"] and kinds.count("start") == 1
        assert kinds[-1] == "finish" and "error" in kinds

    await _run(temporal_server, [agent], body)


async def _model_inputs(runs: TemporalRuns, run_id: str) -> list[dict[str, Any]]:
    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    return [
        json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data)
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name.endswith(".model")
    ]


async def test_the_message_list_goes_only_to_stream_processors(temporal_server: Any) -> None:
    """The prompt is in every model call's input; the message list only when an output stream
    processor reads it (it would double each call's input, and the history, for nothing)."""
    plain = Agent("plain", model=MockModel([text_step("hi there")]))
    held = Agent("held", model=MockModel([text_step("hi there")]), output_processors=[HoldAll()])

    async def body(runs: TemporalRuns) -> None:
        for agent, expected in ((plain, "hi there"), (held, "HI THERE")):
            run_id = await runs.start(agent, "hello")
            assert (await runs.result(run_id))["text"] == expected
            (call,) = await _model_inputs(runs, run_id)
            assert call["options"]["prompt"]
            if agent is plain:
                assert call["messages"] is None
            else:
                assert [m["role"] for m in call["messages"]["messages"]] == ["user"]

    await _run(temporal_server, [plain, held], body)


async def test_a_worker_with_stream_processors_the_workflow_lacked_refuses_the_call() -> None:
    from temporalio.exceptions import ApplicationError
    from temporalio.testing import ActivityEnvironment

    from sluicegate.durable.temporal.activities import DurableActivities

    agent = Agent("skew", model=MockModel([text_step("x")]), output_processors=[HoldAll()])
    activities = DurableActivities(Sluicegate(agents={"skew": agent}))
    model_call = next(
        a for a in activities.all() if getattr(a, "__temporal_activity_definition").name.endswith(".model")
    )
    call = {
        "runId": "r1",
        "stepNumber": 0,
        "offset": 0,
        "options": {"prompt": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
        "states": {},
        "messages": None,
        "requestContext": {},
    }
    with pytest.raises(ApplicationError, match="every worker must load the same application") as refused:
        await ActivityEnvironment().run(model_call, call)
    assert refused.value.non_retryable  # another attempt on the same worker cannot change it


async def test_a_decision_without_an_id_is_pinned_to_the_call_it_checked() -> None:
    """Two approvers race: the one who checked `c1` never approves `c2` the run moved on to."""
    sent: list[list[Any]] = []

    class Handle:
        async def query(self, name: str) -> dict[str, Any]:
            return {"toolCallId": "c1", "kind": "approval", "resourceId": None}

        async def execute_update(self, name: str, *, args: list[Any]) -> dict[str, Any]:
            sent.append(args)
            return {"runId": "r", "offset": 0}

    class FakeClient:
        def get_workflow_handle(self, run_id: str) -> Handle:
            return Handle()

    runs = TemporalRuns(FakeClient())  # type: ignore[arg-type]
    await runs.approve_tool_call("r")
    await runs.decline_tool_call("r", None, "no")
    await runs.resume_stream("r", {"x": 1})
    assert sent == [["c1"], ["c1", "no"], ["c1", {"x": 1}]]


async def test_a_run_id_names_one_run(temporal_server: Any) -> None:
    agent = Agent("echo", model=MockModel([text_step("hello")]))

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi", run_id=f"mine-{uuid.uuid4()}")
        with pytest.raises(InvalidInputError, match=r"run_id: .* already names a run"):
            await runs.start(agent, "hi again", run_id=run_id)
        assert (await runs.result(run_id))["text"] == "hello"
        with pytest.raises(InvalidInputError, match="already names a run"):  # ended: still its id
            await runs.start(agent, "hi again", run_id=run_id)

    await _run(temporal_server, [agent], body)


async def test_resume_data_over_the_payload_limit_is_refused_before_the_update() -> None:
    sent: list[list[Any]] = []

    class Handle:
        async def query(self, name: str) -> dict[str, Any]:
            return {"toolCallId": "c1", "kind": "suspend", "resourceId": None}

        async def execute_update(self, name: str, *, args: list[Any]) -> dict[str, Any]:
            sent.append(args)
            return {"runId": "r", "offset": 0}

    class FakeClient:
        def get_workflow_handle(self, run_id: str) -> Handle:
            return Handle()

    runs = TemporalRuns(FakeClient())  # type: ignore[arg-type]
    with pytest.raises(PayloadTooLargeError, match="the decision"):
        await runs.resume_stream("r", {"blob": "x" * (3 * 1024 * 1024)})
    assert sent == []
