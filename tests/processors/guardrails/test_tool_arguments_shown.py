"""Tool arguments that still work (issue 31, item 5): an output guard that redacts a tool call
redacts what people and stores see of it (the client stream, approval cards, stored history,
spans, the model's next prompt); the tool receives the model's arguments, unless the guard says
`tool_arguments="rewritten"`. Block and filter still stop the call before it runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sluicegate import Agent, create_tool
from sluicegate.errors import ConfigurationError
from sluicegate.memory import Memory
from sluicegate.processors import PIIDetector, Processor, RegexFilter
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tracing import Telemetry, configure

EMAIL = "jane.doe@example.com"
CARD = 4111111111111111
ARGS = {"email": EMAIL, "order": "A-17", "card": CARD}


def guards(tool_arguments: str) -> list[tuple[str, Processor]]:
    return [
        ("regex-filter", RegexFilter(presets=["pii"], strategy="redact", tool_arguments=tool_arguments)),  # type: ignore[arg-type]
        ("pii-detector", PIIDetector(redaction_method="placeholder", tool_arguments=tool_arguments)),  # type: ignore[arg-type]
    ]


CASES = [
    (label, tool_arguments, guard)
    for tool_arguments in ("shown", "rewritten")
    for label, guard in guards(tool_arguments)
]
IDS = [f"{label}-{tool_arguments}" for label, tool_arguments, _ in CASES]


def lookup_order(received: list[Any], *, require_approval: bool = False) -> Any:
    async def execute(args: Any, context: Any) -> dict[str, Any]:
        received.append(args)
        return {"status": "shipped"}

    return create_tool(
        id="lookup_order",
        description="Look an order up by the customer's email",
        input_schema={"type": "object"},
        execute=execute,
        require_approval=require_approval,
    )


def agent_for(guard: Processor, received: list[Any], **kwargs: Any) -> tuple[Agent, MockModel]:
    require_approval = kwargs.pop("require_approval", False)
    model = MockModel([tool_call_step(("c1", "lookup_order", ARGS)), text_step("It shipped.")])
    agent = Agent(
        name="orders",
        model=model,
        tools=[lookup_order(received, require_approval=require_approval)],
        output_processors=[guard],
        **kwargs,
    )
    return agent, model


def assert_redacted(value: Any) -> None:
    text = json.dumps(value, default=str)
    assert EMAIL not in text and str(CARD) not in text.replace(" ", ""), text


def expected_for(tool_arguments: str, shown: Any) -> Any:
    return ARGS if tool_arguments == "shown" else shown


@pytest.mark.parametrize(("label", "tool_arguments", "guard"), CASES, ids=IDS)
async def test_stream_shows_the_call_redacted_and_the_tool_gets_what_the_setting_says(
    label: str, tool_arguments: str, guard: Processor
) -> None:
    received: list[Any] = []
    agent, model = agent_for(guard, received)
    output = await agent.stream("where is my order?")
    chunks = [c async for c in output.full_stream]
    call = next(c for c in chunks if c.type == "tool-call")
    assert_redacted(call.payload.args)
    assert received == [expected_for(tool_arguments, call.payload.args)]
    result = next(c for c in chunks if c.type == "tool-result")
    assert_redacted(result.payload.args)
    # The model's next step reads the call as stored: redacted.
    assert EMAIL not in json.dumps(model.calls[1].prompt, default=str)


@pytest.mark.parametrize(("label", "tool_arguments", "guard"), CASES, ids=IDS)
async def test_generate_and_memory_store_the_redacted_call(
    label: str, tool_arguments: str, guard: Processor
) -> None:
    store = SQLiteStore(":memory:")
    received: list[Any] = []
    agent, _ = agent_for(guard, received, memory=Memory(storage=store))
    result = await agent.generate("where is my order?", memory={"thread": "t1", "resource": "u1"})
    (call,) = result.tool_calls
    assert_redacted(call.payload.args)
    assert received == [expected_for(tool_arguments, call.payload.args)]
    stored = [m.to_dict() for m in await store.list_messages("t1")]
    assert "lookup_order" in json.dumps(stored)
    assert_redacted(stored)


@pytest.mark.parametrize(("label", "tool_arguments", "guard"), CASES, ids=IDS)
async def test_an_approval_card_is_redacted_and_the_approved_tool_gets_what_the_setting_says(
    label: str, tool_arguments: str, guard: Processor, tmp_path: Path
) -> None:
    # The run waits in SQLite and is approved through a second agent object, as another
    # process would: what the tool receives survives the stored snapshot.
    store = SQLiteStore(str(tmp_path / "runs.db"))
    received: list[Any] = []
    agent, _ = agent_for(guard, received, require_approval=True, suspended_runs=store)
    output = await agent.stream("where is my order?")
    chunks = [c async for c in output.full_stream]
    card = chunks[-1]
    assert card.type == "tool-call-approval" and received == []
    assert_redacted(card.to_dict())
    other, _ = agent_for(guard, received, require_approval=True, suspended_runs=store)
    other.model = MockModel([text_step("It shipped.")])  # type: ignore[misc]
    resumed = await other.approve_tool_call(run_id=output.run_id)
    after = [c async for c in resumed.full_stream]
    assert received == [expected_for(tool_arguments, card.payload.args)]
    assert_redacted([c.to_dict() for c in after])


@pytest.mark.parametrize(("label", "tool_arguments", "guard"), CASES, ids=IDS)
async def test_spans_show_the_redacted_arguments(label: str, tool_arguments: str, guard: Processor) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    telemetry: Telemetry = configure(in_memory=True, capture_content=True, set_global=False)
    try:
        received: list[Any] = []
        agent, _ = agent_for(guard, received)
        await agent.generate("where is my order?")
        spans = telemetry.spans()
    finally:
        telemetry.shutdown()
    assert received == [ARGS if tool_arguments == "shown" else received[0]]
    (tool_span,) = [s for s in spans if s.name == "execute_tool lookup_order"]
    assert_redacted(json.loads(tool_span.attributes["gen_ai.tool.call.arguments"]))
    for span in spans:
        assert EMAIL not in json.dumps(dict(span.attributes or {}), default=str), span.name


async def test_block_and_filter_still_stop_the_call_before_it_runs() -> None:
    for guard in (
        RegexFilter(presets=["pii"], strategy="block"),
        PIIDetector(strategy="block"),
        PIIDetector(strategy="filter"),
    ):
        received: list[Any] = []
        agent, _ = agent_for(guard, received)
        await (await agent.stream("where is my order?")).consume()
        assert received == [], guard


async def test_two_guards_showing_redactions_give_the_tool_the_model_arguments() -> None:
    received: list[Any] = []
    email_only = RegexFilter(rules=[{"name": "email", "pattern": r"[\w.]+@[\w.]+\.com"}], strategy="redact")
    agent = Agent(
        name="orders",
        model=MockModel([tool_call_step(("c1", "lookup_order", ARGS)), text_step("ok")]),
        tools=[lookup_order(received)],
        output_processors=[email_only, PIIDetector(redaction_method="placeholder")],
    )
    result = await agent.generate("where is my order?")
    assert_redacted(result.tool_calls[0].payload.args)
    assert received == [ARGS]


async def test_a_rewriting_guard_after_a_showing_one_keeps_its_redaction_for_the_tool() -> None:
    received: list[Any] = []
    agent = Agent(
        name="orders",
        model=MockModel([tool_call_step(("c1", "lookup_order", ARGS)), text_step("ok")]),
        tools=[lookup_order(received)],
        output_processors=[
            RegexFilter(rules=[{"name": "email", "pattern": r"[\w.]+@[\w.]+\.com"}], strategy="redact"),
            PIIDetector(
                redaction_method="placeholder", detection_types=["credit-card"], tool_arguments="rewritten"
            ),
        ],
    )
    await agent.generate("where is my order?")
    assert received == [{"email": EMAIL, "order": "A-17", "card": "[CREDIT-CARD]"}]


def test_an_unknown_setting_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"tool_arguments.*'hidden'"):
        RegexFilter(presets=["pii"], tool_arguments="hidden")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"tool_arguments.*'Shown'"):
        PIIDetector(tool_arguments="Shown")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="pseudonymize"):
        PIIDetector(strategy="pseudonymize", tool_arguments="rewritten")


async def test_pseudonymize_keeps_restoring_tokens_for_tools() -> None:
    seen: list[Any] = []
    pseudo = PIIDetector(strategy="pseudonymize")

    def echo_token(options: Any) -> Any:
        import re

        token = re.search(r"<EMAIL_\d+>", json.dumps(options.prompt))
        assert token is not None
        return tool_call_step(("c1", "lookup_order", {"email": token.group(0)}))

    agent = Agent(
        name="orders",
        model=MockModel([echo_token, text_step("ok")]),
        tools=[lookup_order(seen)],
        input_processors=[pseudo],
        output_processors=[pseudo],
    )
    context = RequestContext()
    context.set(RESOURCE_ID_KEY, "u1")
    await agent.generate(f"my email is {EMAIL}", request_context=context)
    assert seen == [{"email": EMAIL}]


async def test_a_call_id_used_twice_in_a_step_gives_neither_tool_the_other_calls_values() -> None:
    received: list[Any] = []
    other = {"email": "john.roe@example.com", "order": "B-2", "card": CARD}
    agent = Agent(
        name="orders",
        model=MockModel(
            [
                tool_call_step(("c1", "lookup_order", ARGS), ("c1", "lookup_order", other)),
                tool_call_step(("c1", "lookup_order", other)),  # a later step may reuse the id
                text_step("ok"),
            ]
        ),
        tools=[lookup_order(received)],
        output_processors=[RegexFilter(presets=["pii"], strategy="redact")],
    )
    await agent.generate("where are my orders?")
    assert len(received) == 3
    assert_redacted(received[:2])  # ambiguous: fail closed
    assert received[2] == other


def test_merge_puts_back_only_what_the_guard_changed() -> None:
    from sluicegate.guardrails.shown_arguments import export, forget, remember, restore

    state: dict[str, Any] = {}
    original = {"jane@example.com": "primary", "n": [1, CARD], "note": "hi"}
    shown = {"[EMAIL]": "primary", "n": [1, "[CREDIT_CARD]"], "note": "hi"}
    remember(state, "c1", shown, original)
    assert export(state) == {"tool_arguments_shown": {"c1": [shown, original]}}
    # a later processor changed "note": its change stays, the guard's redactions are undone
    current = {"[EMAIL]": "primary", "n": [1, "[CREDIT_CARD]"], "note": "[X]"}
    restored, changed = restore(state, "c1", current)
    assert changed and restored == {"jane@example.com": "primary", "n": [1, CARD], "note": "[X]"}
    assert restore(state, "c1", current) == (restored, True)  # again, for a resumed tool
    remember(state, "c2", {"v": "[EMAIL]"}, {"v": object()})
    # not JSON: not kept over a suspension (fail closed); c1 is
    assert export(state) == {"tool_arguments_shown": {"c1": [shown, original]}}
    forget(state)
    assert restore(state, "c2", {"v": "[EMAIL]"}) == ({"v": "[EMAIL]"}, False)


async def test_a_tool_that_suspends_gets_the_model_arguments_again_when_resumed() -> None:
    from sluicegate.tools import ToolContext

    seen: list[Any] = []

    async def confirm(args: Any, context: ToolContext) -> Any:
        seen.append(args)
        if context.resume_data is None:
            await context.suspend({"question": "send it?"})
            return None
        return {"sent": True}

    tool = create_tool(
        id="lookup_order",
        input_schema={"type": "object"},
        suspend_schema={"type": "object"},
        resume_schema={"type": "object"},
        execute=confirm,
    )
    store = SQLiteStore(":memory:")
    agent = Agent(
        name="orders",
        model=MockModel([tool_call_step(("c1", "lookup_order", ARGS)), text_step("sent")]),
        tools=[tool],
        output_processors=[RegexFilter(presets=["pii"], strategy="redact")],
        suspended_runs=store,
    )
    output = await agent.stream("send it")
    chunks = [c async for c in output.full_stream]
    assert chunks[-1].type == "tool-call-suspended"
    assert_redacted(chunks[-1].to_dict())
    resumed = await agent.resume_stream({"ok": True}, run_id=output.run_id)
    after = [c async for c in resumed.full_stream]
    assert seen == [ARGS, ARGS]
    assert_redacted([c.to_dict() for c in after])
