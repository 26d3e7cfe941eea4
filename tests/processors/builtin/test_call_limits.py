"""ToolCallLimit and ModelCallLimit: what counts, tripwire against answer, "*" and per-tool
limits, run and thread scope, and the options they refuse."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate import Agent, RequestContext, create_tool
from sluicegate.errors import UnknownOptionError
from sluicegate.processors import (
    InMemoryCallCountStore,
    ModelCallLimit,
    ProcessorViolation,
    ToolCallLimit,
)
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.testing import MockModel, text_step, tool_call_step


def counting_tools(*names: str) -> tuple[dict[str, Any], list[str]]:
    ran: list[str] = []

    def make(name: str) -> Any:
        def execute(args: Any, context: Any) -> str:
            ran.append(name)
            return f"{name} done"

        return create_tool(id=name, description=name, execute=execute)

    return {name: make(name) for name in names}, ran


def thread(thread_id: str = "t1", resource: str = "u1") -> RequestContext:
    return RequestContext({THREAD_ID_KEY: thread_id, RESOURCE_ID_KEY: resource})


def refusals(model: MockModel) -> dict[str, str]:
    """The refused calls the model read in its last prompt: call id -> the reason."""
    return {
        part["toolCallId"]: part["output"]["value"]
        for message in model.calls[-1].prompt
        if message["role"] == "tool"
        for part in message["content"]
        if part["output"].get("type") == "error-text"
    }


def tool_results(result: Any) -> list[Any]:
    return [c for step in result.steps for c in [*step.tool_results, *step.tool_errors]]


async def test_tripwire_names_the_limit_and_the_refused_call_never_runs() -> None:
    tools, ran = counting_tools("send_email")
    model = MockModel([tool_call_step((f"c{i}", "send_email", {})) for i in range(3)] + [text_step("x")])
    limit = ToolCallLimit(limits={"send_email": 2})
    agent = Agent(name="a", model=model, tools=tools, output_processors=[limit])
    result = await agent.generate("go", max_steps=5)
    assert ran == ["send_email", "send_email"]
    assert result.tripwire is not None
    assert result.tripwire.reason == "Tool call limit reached: 2 calls of tool 'send_email' per run"
    assert result.tripwire.processor_id == "tool-call-limit"
    assert result.tripwire.metadata["limit"] == 2 and result.tripwire.metadata["tool"] == "send_email"


async def test_answer_refuses_the_call_and_the_model_answers_without_it() -> None:
    tools, ran = counting_tools("send_email")
    seen: list[ProcessorViolation] = []
    model = MockModel(
        [tool_call_step(("c1", "send_email", {})), tool_call_step(("c2", "send_email", {})), text_step("ok")]
    )
    limit = ToolCallLimit(limits={"send_email": 1}, on_limit="answer", on_violation=seen.append)
    agent = Agent(name="a", model=model, tools=tools, output_processors=[limit])
    result = await agent.generate("go", max_steps=5)
    assert result.tripwire is None and result.text == "ok"
    assert ran == ["send_email"]
    assert not result.steps[1].tool_errors and not result.steps[1].tool_results
    # the model read the refusal as the call's error result
    refused = refusals(model)
    assert list(refused) == ["c2"] and "'send_email' is no longer available" in refused["c2"]
    assert len(seen) == 1 and seen[0].detail["tool_call_id"] == "c2"


async def test_star_and_per_tool_limits_hold_for_parallel_calls_of_one_step() -> None:
    tools, ran = counting_tools("send_email", "lookup")
    calls = [(f"e{i}", "send_email", {}) for i in range(3)] + [(f"l{i}", "lookup", {}) for i in range(4)]
    model = MockModel([tool_call_step(*calls), text_step("done")])
    limit = ToolCallLimit(limits={"*": 4, "send_email": 1}, on_limit="answer")
    agent = Agent(name="a", model=model, tools=tools, output_processors=[limit])
    result = await agent.generate("go", max_steps=3)
    assert ran.count("send_email") == 1 and len(ran) == 4
    assert len(refusals(model)) == 3 and len(result.steps[0].tool_results) == 4
    star_refusals = [r for r in refusals(model).values() if "make no more tool calls" in r]
    assert star_refusals  # "*" refused some lookups


async def test_a_tool_without_a_limit_is_not_counted() -> None:
    tools, ran = counting_tools("send_email", "lookup")
    model = MockModel([tool_call_step(*[(f"l{i}", "lookup", {}) for i in range(5)]), text_step("done")])
    limit = ToolCallLimit(limits={"send_email": 0})
    result = await Agent(name="a", model=model, tools=tools, output_processors=[limit]).generate("go")
    assert result.tripwire is None and len(ran) == 5


async def test_thread_scope_counts_across_runs_and_threads_apart() -> None:
    tools, ran = counting_tools("send_email")
    limit = ToolCallLimit(limits={"send_email": 2}, scope="thread", on_limit="answer")

    def agent() -> Agent:
        model = MockModel([tool_call_step(("c", "send_email", {})), text_step("ok")])
        return Agent(name="a", model=model, tools=tools, output_processors=[limit])

    for _ in range(3):
        await agent().generate("go", request_context=thread("t1"))
    assert len(ran) == 2
    await agent().generate("go", request_context=thread("t2"))
    assert len(ran) == 3


async def test_a_declined_call_is_not_counted() -> None:
    sent: list[str] = []

    def execute(args: Any, context: Any) -> str:
        sent.append("x")
        return "sent"

    send = create_tool(id="send_email", description="send", execute=execute, require_approval=True)
    model = MockModel(
        [tool_call_step(("c1", "send_email", {})), tool_call_step(("c2", "send_email", {})), text_step("ok")]
    )
    limit = ToolCallLimit(limits={"send_email": 1}, on_limit="answer")
    agent = Agent(name="a", model=model, tools={"send_email": send}, output_processors=[limit])
    first = await agent.generate("go", max_steps=4)
    assert first.finish_reason == "suspended"
    second = await agent.decline_tool_call_generate(run_id=first.run_id, tool_call_id="c1")
    assert second.finish_reason == "suspended"  # the declined call left the limit untouched
    third = await agent.approve_tool_call_generate(run_id=second.run_id, tool_call_id="c2")
    assert third.text == "ok" and sent == ["x"]


async def test_model_call_limit_run_ends_with_a_tripwire_before_the_extra_call() -> None:
    tools, _ = counting_tools("lookup")
    model = MockModel([tool_call_step((f"c{i}", "lookup", {})) for i in range(5)])
    limit = ModelCallLimit(run=2)
    agent = Agent(name="a", model=model, tools=tools, input_processors=[limit])
    result = await agent.generate("go", max_steps=5)
    assert len(model.calls) == 2
    assert result.tripwire is not None
    assert result.tripwire.reason == "Model call limit reached: 2 model calls per run"
    assert result.tripwire.metadata["scope"] == "run"


async def test_model_call_limit_thread_spans_runs() -> None:
    store = InMemoryCallCountStore()
    limit = ModelCallLimit(thread=3, store=store)
    model = MockModel([text_step("ok") for _ in range(3)])
    agent = Agent(name="a", model=model, input_processors=[limit])
    outcomes = [await agent.generate("hi", request_context=thread("t9")) for _ in range(4)]
    assert [o.tripwire is None for o in outcomes] == [True, True, True, False]
    assert len(model.calls) == 3
    assert outcomes[-1].tripwire is not None and "per thread" in outcomes[-1].tripwire.reason


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"limits": {"x": 1}, "scope": "resource"}, ValueError, "scope must be 'run' or 'thread'"),
        ({"limits": {"x": -1}}, ValueError, "must not be negative"),
        ({"limits": {"x": True}}, TypeError, "must be an int"),
        ({"limits": {"x": 1.5}}, TypeError, "must be an int"),
        ({"limits": {}}, ValueError, "non-empty mapping"),
        ({"limits": [("x", 1)]}, ValueError, "non-empty mapping"),
        ({"limits": {"": 1}}, TypeError, "tool names"),
        ({"limits": {"send_*": 1}}, ValueError, "no patterns"),
        ({"limits": {3: 1}}, TypeError, "tool names"),
        ({"limits": {"x": 1}, "on_limit": "end"}, ValueError, "on_limit must be"),
        ({"limits": {"x": 1}, "store": object()}, TypeError, "CallCountStore"),
        ({"limit": {"x": 1}}, UnknownOptionError, "limit"),
    ],
)
def test_tool_call_limit_options_are_checked(options: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        ToolCallLimit(**options)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({}, ValueError, "needs a limit"),
        ({"run": -2}, ValueError, "run must not be negative"),
        ({"thread": "3"}, TypeError, "thread must be an int"),
        ({"runs": 3}, UnknownOptionError, "runs"),
    ],
)
def test_model_call_limit_options_are_checked(options: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        ModelCallLimit(**options)


def test_the_studio_lists_the_limits_and_the_retry() -> None:
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    from fastapi.testclient import TestClient

    from sluicegate import Sluicegate
    from sluicegate.processors import ToolRetry
    from sluicegate.server import ServerSettings, create_app

    tools, _ = counting_tools("send_email")
    limits = [ToolCallLimit(limits={"*": 3}), ModelCallLimit(run=3), ToolRetry()]
    agent = Agent(
        name="a",
        model=MockModel([]),
        tools=tools,
        input_processors=[limits[1], limits[2]],
        output_processors=[limits[0]],
    )
    registry = Sluicegate(agents={"a": agent}, processors=limits)
    with TestClient(create_app(registry, ServerSettings())) as client:
        catalogue = client.get("/api/processors").json()
    assert catalogue["tool-call-limit"]["hooks"] == ["process_tool_call"]
    assert catalogue["tool-call-limit"]["name"] == "Tool Call Limit"
    assert catalogue["model-call-limit"]["hooks"] == ["process_llm_request"]
    assert catalogue["tool-retry"]["phases"] == ["inputStep"]
    assert catalogue["tool-retry"]["configurations"] == [{"agentId": "a", "type": "input"}]
    assert catalogue["tool-call-limit"]["description"].startswith("Limits on tool calls")


def test_a_durable_run_reaches_the_counter_store_through_the_processors_store() -> None:
    stores = pytest.importorskip("sluicegate.durable.temporal.stores")
    store = InMemoryCallCountStore()
    for processor in (ToolCallLimit(limits={"*": 1}, store=store), ModelCallLimit(thread=1, store=store)):
        assert processor.store is store and stores.has_store(processor)
        assert {"reserve_calls", "call_counts"} <= set(stores.store_methods(processor.store))


async def test_a_run_limit_survives_a_suspension() -> None:
    sent: list[str] = []

    def execute(args: Any, context: Any) -> str:
        sent.append(context.tool_call_id)
        return "sent"

    send = create_tool(id="send_email", description="send", execute=execute, require_approval=True)
    model = MockModel(
        [tool_call_step(("c1", "send_email", {})), tool_call_step(("c2", "send_email", {})), text_step("ok")]
    )
    limit = ToolCallLimit(limits={"send_email": 1}, on_limit="answer")
    agent = Agent(name="a", model=model, tools={"send_email": send}, output_processors=[limit])
    first = await agent.generate("go", max_steps=4)
    second = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="c1")
    assert second.finish_reason == "suspended" and sent == ["c1"]
    third = await agent.approve_tool_call_generate(run_id=second.run_id, tool_call_id="c2")
    assert sent == ["c1"]  # approved, but over the run's limit counted before the suspension
    assert third.text == "ok"
    assert "no longer available" in refusals(model)["c2"]
