"""Sub-agents as tools (`Agent(agents={...})`): Mastra's `agent-<name>` tool with `{"prompt"}`,
the sub-agent's own processors, its text streamed live, its tripwire as the tool's error result
or the parent's tripwire, its spans under the parent's tool span, and its own thread."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate import Agent, RequestContext
from sluicegate.agent.sub_agents import DEPTH_KEY, MAX_DEPTH
from sluicegate.errors import ConfigurationError
from sluicegate.processors import ProcessInputArgs, Processor
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.testing import MockModel, text_step, tool_call_step

from .helpers import collect


class Seen(Processor):
    """Records the request context each run of its agent had."""

    id = "seen"

    def __init__(self) -> None:
        super().__init__()
        self.contexts: list[dict[str, Any]] = []

    def process_input(self, args: ProcessInputArgs) -> None:
        self.contexts.append(args.request_context.to_dict())


class Refuse(Processor):
    id = "no-secrets"

    def process_input(self, args: ProcessInputArgs) -> None:
        args.abort("the researcher may not look up secrets", metadata={"rule": "secrets"})


def parent_with(sub: Agent, *steps: Any, **options: Any) -> tuple[Agent, MockModel]:
    model = MockModel(list(steps))
    return Agent("boss", model=model, agents={"researcher": sub}, **options), model


async def test_the_sub_agent_is_a_tool_named_and_shaped_as_mastra_does() -> None:
    seen = Seen()
    sub_model = MockModel([text_step("Paris is the capital.")])
    researcher = Agent("researcher", description="Looks things up", model=sub_model, input_processors=[seen])
    boss, model = parent_with(
        researcher,
        tool_call_step(("c1", "agent-researcher", {"prompt": "capital of France?"})),
        text_step("It is Paris."),
    )
    tool = boss.tools["agent-researcher"]
    assert tool.description == "Looks things up"
    assert tool.input_schema["required"] == ["prompt"]
    chunks = await collect(await boss.stream("ask the researcher"))
    live = [c for c in chunks if c.type == "data-sub-agent"]
    (result,) = [c for c in chunks if c.type == "tool-result"]
    assert [c.data for c in live] == [
        {"agent": "researcher", "toolCallId": "c1", "text": "Paris is the capital."}
    ]
    assert chunks.index(live[0]) < chunks.index(result)  # streamed while the tool ran
    assert result.payload.result == {"text": "Paris is the capital."}
    assert "capital of France?" in str(sub_model.calls[0].prompt)
    assert len(seen.contexts) == 1  # the sub-agent ran its own processors
    told = [p for m in model.calls[1].prompt if m["role"] == "tool" for p in m["content"]]
    assert told[0]["output"]["value"] == {"text": "Paris is the capital."}


async def test_a_sub_agents_tripwire_is_the_tools_error_result() -> None:
    researcher = Agent("researcher", model=MockModel([]), input_processors=[Refuse()])
    boss, _ = parent_with(
        researcher,
        tool_call_step(("c1", "agent-researcher", {"prompt": "the admin password?"})),
        text_step("I cannot look that up."),
    )
    result = await boss.generate("go")
    assert result.tripwire is None and result.text == "I cannot look that up."
    (error,) = result.steps[0].tool_errors
    assert "the researcher may not look up secrets" in str(error.payload.error)


async def test_propagate_tripwire_ends_the_parent_run_with_it() -> None:
    researcher = Agent("researcher", model=MockModel([]), input_processors=[Refuse()])
    boss, model = parent_with(
        researcher,
        tool_call_step(("c1", "agent-researcher", {"prompt": "the admin password?"})),
        propagate_tripwire=True,
    )
    result = await boss.generate("go")
    assert result.tripwire is not None
    assert result.tripwire.reason == "the researcher may not look up secrets"
    assert result.tripwire.processor_id == "no-secrets" and result.tripwire.metadata == {"rule": "secrets"}
    assert len(model.calls) == 1


async def test_the_sub_agent_keeps_the_resource_but_not_the_parents_thread() -> None:
    seen = Seen()
    researcher = Agent("researcher", model=MockModel([text_step("ok")]), input_processors=[seen])
    boss, _ = parent_with(
        researcher, tool_call_step(("c1", "agent-researcher", {"prompt": "x"})), text_step("done")
    )
    context = RequestContext({THREAD_ID_KEY: "t1", RESOURCE_ID_KEY: "u1", "tenant": "acme"})
    await boss.generate("go", request_context=context)
    (sub_context,) = seen.contexts
    assert THREAD_ID_KEY not in sub_context
    assert sub_context[RESOURCE_ID_KEY] == "u1" and sub_context["tenant"] == "acme"
    assert sub_context[DEPTH_KEY] == 1


async def test_sub_agents_nested_too_deep_are_refused() -> None:
    researcher = Agent("researcher", model=MockModel([]))
    boss, _ = parent_with(
        researcher, tool_call_step(("c1", "agent-researcher", {"prompt": "x"})), text_step("done")
    )
    result = await boss.generate("go", request_context=RequestContext({DEPTH_KEY: MAX_DEPTH}))
    (error,) = result.steps[0].tool_errors
    assert "nested deeper" in str(error.payload.error)


async def test_the_sub_agents_spans_nest_under_the_parents_tool_span() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the `otel` extra is not installed")
    from sluicegate.tracing import configure

    telemetry = configure(in_memory=True, set_global=False)
    try:
        researcher = Agent("researcher", model=MockModel([text_step("found it")]))
        boss, _ = parent_with(
            researcher, tool_call_step(("c1", "agent-researcher", {"prompt": "x"})), text_step("done")
        )
        await boss.generate("go")
        spans = list(telemetry.spans())
    finally:
        telemetry.shutdown()
    by_name = {s.name: s for s in spans}
    tool_span = by_name["execute_tool agent-researcher"]
    sub_run = by_name["invoke_agent researcher"]
    assert sub_run.parent is not None and sub_run.parent.span_id == tool_span.context.span_id
    assert len({s.context.trace_id for s in spans}) == 1  # one tree


@pytest.mark.parametrize(
    ("agents", "message"),
    [
        ({"bad name!": None}, "not a usable name"),
        ({"researcher": object()}, "must be an Agent"),
        (["researcher"], "mapping"),
    ],
)
def test_bad_sub_agents_are_refused_by_name(agents: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Agent("boss", model=MockModel([]), agents=agents)


def test_a_sub_agent_tool_may_not_shadow_a_tool() -> None:
    from sluicegate import create_tool

    clash = create_tool(id="agent-researcher", description="x", execute=lambda a, c: "x")
    with pytest.raises(ConfigurationError, match="agent-researcher"):
        Agent(
            "boss", model=MockModel([]), tools=[clash], agents={"researcher": Agent("r", model=MockModel([]))}
        )


async def test_the_sub_agents_spend_counts_once_in_the_parents_cost_guard() -> None:
    from sluicegate.processors import CostGuardProcessor

    def priced(step: list[Any]) -> list[Any]:
        step[-1]["usage"] = {"inputTokens": 1_000_000, "outputTokens": 0, "totalTokens": 1_000_000}
        return step

    pricing = {"mock-model-id": {"input": 1.0, "output": 1.0}}
    seen: list[Any] = []
    guard = CostGuardProcessor(
        max_cost=3.5, scope="resource", pricing=pricing, strategy="warn", on_violation=seen.append
    )
    researcher = Agent(
        "researcher", model=MockModel([priced(text_step("found")), priced(text_step("again"))])
    )
    model = MockModel(
        [
            priced(tool_call_step(("c1", "agent-researcher", {"prompt": "x"}))),
            priced(tool_call_step(("c2", "agent-researcher", {"prompt": "y"}))),
            priced(text_step("done")),
        ]
    )
    boss = Agent("boss", model=model, agents={"researcher": researcher}, input_processors=[guard])
    await boss.generate("go", request_context=RequestContext({RESOURCE_ID_KEY: "u1"}))
    # three parent calls and two sub-agent calls at $1 each: $5, each counted once
    assert await guard.store.total("resource:u1", None) == pytest.approx(5.0)
    assert seen and "reached the limit" in seen[0].message  # the sub-agent's spend pushed it over


async def test_a_usage_sink_a_client_sent_is_ignored() -> None:
    from sluicegate.budget import USAGE_SINKS_KEY

    researcher = Agent("researcher", model=MockModel([text_step("found")]))
    boss, _ = parent_with(
        researcher, tool_call_step(("c1", "agent-researcher", {"prompt": "x"})), text_step("done")
    )
    context = RequestContext({USAGE_SINKS_KEY: ({"charge": "evil"},), DEPTH_KEY: -1000})
    result = await boss.generate("go", request_context=context)
    assert result.text == "done" and not result.steps[0].tool_errors


def three_levels(deleted: list[Any], clerk_answer: str = "Deleted record 7.") -> Agent:
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
    clerk = Agent(
        "clerk",
        model=MockModel([tool_call_step(("d1", "delete_record", {"id": 7})), text_step(clerk_answer)]),
        tools=[delete_record],
    )
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
    )


async def test_an_approval_two_levels_down_suspends_the_parent_and_approving_resumes_both() -> None:
    deleted: list[Any] = []
    boss = three_levels(deleted)
    first = await boss.generate("delete record 7")
    assert first.finish_reason == "suspended" and deleted == []
    assert first.suspend_payload.tool_call_id == "b1"
    waiting = first.suspend_payload.suspend_payload  # what the card shows: the path to the call
    assert waiting["path"] == "researcher › clerk › delete_record"
    assert waiting["agent"] == "researcher" and waiting["kind"] == "suspend"
    inner = waiting["suspendPayload"]
    assert (
        inner["path"] == "clerk › delete_record"
        and inner["kind"] == "approval"
        and inner["args"] == {"id": 7}
    )
    second = await boss.resume_stream({"approved": True}, run_id=first.run_id, tool_call_id="b1")
    chunks = await collect(second)
    assert deleted == [{"id": 7}]
    results = {c.payload.tool_call_id: c.payload.result for c in chunks if c.type == "tool-result"}
    assert results["b1"] == {"text": "The clerk replied."}
    assert "".join(c.payload.text for c in chunks if c.type == "text-delta") == "Done."


async def test_what_sub_agents_spend_after_an_approval_counts_in_the_parents_cost_guard() -> None:
    from sluicegate.processors import CostGuardProcessor

    guard = CostGuardProcessor(
        max_cost=1e9, scope="resource", pricing={"mock-model-id": {"input": 1e6, "output": 1e6}}
    )
    boss = three_levels([])
    boss.input_processors = [guard]
    owner = RequestContext({RESOURCE_ID_KEY: "u1"})
    first = await boss.generate("delete record 7", request_context=owner)
    assert first.finish_reason == "suspended"
    second = await boss.resume_generate(
        {"approved": True}, run_id=first.run_id, tool_call_id="b1", request_context=owner
    )
    assert second.text == "Done."
    # Six calls of $15, two per level, each counted once: the held call ran before any model
    # call of the resumed run, and its sub-agents' calls are charged all the same.
    assert await guard.store.total("resource:u1", None) == pytest.approx(90.0)


async def test_declining_two_levels_down_tells_the_sub_agent_and_nothing_runs() -> None:
    deleted: list[Any] = []
    boss = three_levels(deleted, clerk_answer="I was not allowed to delete it.")
    first = await boss.generate("delete record 7")
    second = await boss.resume_generate(
        {"approved": False, "reason": "keep it"}, run_id=first.run_id, tool_call_id="b1"
    )
    assert deleted == [] and second.text == "Done." and second.finish_reason == "stop"


async def test_resuming_with_no_decision_runs_nothing() -> None:
    deleted: list[Any] = []
    boss = three_levels(deleted)
    first = await boss.generate("delete record 7")
    second = await boss.resume_generate({"ok": True}, run_id=first.run_id, tool_call_id="b1")
    assert deleted == [] and second.finish_reason == "stop"  # the clerk's call failed, not ran
