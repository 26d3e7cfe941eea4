"""PII in the model's tool-call arguments: a blocking guard stops the run before the tool runs
(and before a person is asked to approve the call), streamed or not; redaction rewrites them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate import Agent, create_tool
from sluicegate.processors import PIIDetector, Processor, ProcessorViolation, RegexFilter
from sluicegate.testing import MockModel, text_step, tool_call_step

from .conftest import routed_detector

EMAIL = "jane.roe@example.com"
ARGS = {"to": EMAIL, "body": "hello"}


def make_agent(guard: Processor, received: list[Any], *, streamed_args: bool = False) -> Agent:
    async def send(args: Any, context: Any) -> str:
        received.append(args)
        return "sent"

    tool = create_tool(id="send", description="Send mail", input_schema={"type": "object"}, execute=send)
    if streamed_args:
        args_json = json.dumps(ARGS)
        step: list[dict[str, Any]] = [
            {"type": "stream-start", "warnings": []},
            {"type": "tool-input-start", "id": "c1", "toolName": "send"},
            *(
                {"type": "tool-input-delta", "id": "c1", "delta": args_json[i : i + 4]}
                for i in range(0, len(args_json), 4)
            ),
            {"type": "tool-input-end", "id": "c1"},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "send", "input": args_json},
            {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}},
        ]
    else:
        step = tool_call_step(("c1", "send", ARGS))
    return Agent(
        name="mailer", model=MockModel([step, text_step("done")]), tools=[tool], output_processors=[guard]
    )


def blocking_guards() -> list[tuple[str, Processor]]:
    return [
        ("pii-detector", PIIDetector(strategy="block")),
        ("pii-detector-email-only", PIIDetector(strategy="block", detection_types=["email"])),
        ("regex-filter", RegexFilter(presets=["pii"], strategy="block")),
    ]


@pytest.mark.parametrize("approval", [False, True], ids=["no-approval", "approval"])
@pytest.mark.parametrize("streamed_args", [False, True], ids=["whole-args", "streamed-args"])
@pytest.mark.parametrize(("label", "guard"), blocking_guards(), ids=lambda v: v if isinstance(v, str) else "")
async def test_block_trips_on_pii_in_tool_call_arguments_when_streaming(
    label: str, guard: Processor, streamed_args: bool, approval: bool
) -> None:
    received: list[Any] = []
    agent = make_agent(guard, received, streamed_args=streamed_args)
    output = await agent.stream("mail jane", require_tool_approval=approval)
    chunks = [c async for c in output.full_stream]
    kinds = [c.type for c in chunks]
    assert kinds[-1] == "tripwire", kinds
    assert received == []  # the tool never ran
    assert "tool-call-approval" not in kinds  # nobody was asked to approve it
    assert "tool-call" not in kinds
    streamed = "".join(c.payload.args_text_delta for c in chunks if c.type == "tool-call-delta")
    assert "jane.roe" not in streamed  # no piece of the value went out as a delta either
    assert EMAIL not in json.dumps([c.to_dict() for c in chunks], default=str)


@pytest.mark.parametrize("approval", [False, True], ids=["no-approval", "approval"])
@pytest.mark.parametrize(("label", "guard"), blocking_guards(), ids=lambda v: v if isinstance(v, str) else "")
async def test_block_trips_on_pii_in_tool_call_arguments_in_generate(
    label: str, guard: Processor, approval: bool
) -> None:
    received: list[Any] = []
    agent = make_agent(guard, received)
    result = await agent.generate("mail jane", require_tool_approval=approval)
    assert result.tripwire is not None
    assert received == []
    assert result.finish_reason != "suspended"


async def test_a_tool_call_without_pii_still_runs_under_a_blocking_guard() -> None:
    received: list[Any] = []
    guard = PIIDetector(strategy="block")

    async def send(args: Any, context: Any) -> str:
        received.append(args)
        return "sent"

    tool = create_tool(id="send", description="Send", input_schema={"type": "object"}, execute=send)
    agent = Agent(
        name="m",
        model=MockModel([tool_call_step(("c1", "send", {"to": "the team"})), text_step("done")]),
        tools=[tool],
        output_processors=[guard],
    )
    result = await agent.generate("go")
    assert result.tripwire is None and received == [{"to": "the team"}]


@pytest.mark.parametrize(
    ("tool_arguments", "expected"),
    [("shown", ARGS), ("rewritten", {"to": "[EMAIL]", "body": "hello"})],
)
async def test_redaction_shows_tool_call_arguments_redacted(tool_arguments: str, expected: Any) -> None:
    received: list[Any] = []
    guard = PIIDetector(redaction_method="placeholder", tool_arguments=tool_arguments)  # type: ignore[arg-type]
    agent = make_agent(guard, received, streamed_args=True)
    output = await agent.stream("mail jane")
    chunks = [c async for c in output.full_stream]
    call = next(c for c in chunks if c.type == "tool-call")
    assert call.payload.args == {"to": "[EMAIL]", "body": "hello"}
    assert received == [expected]


def judge(prompt: str) -> dict[str, Any]:
    """A detector that finds the address wherever it is shown one."""
    if EMAIL in prompt:
        return {"detections": [{"type": "email", "value": EMAIL, "confidence": 0.9}]}
    return {}


async def run_with(guard: PIIDetector, *, streamed_args: bool = True) -> tuple[list[Any], list[Any]]:
    received: list[Any] = []
    output = await make_agent(guard, received, streamed_args=streamed_args).stream("mail jane")
    return [c async for c in output.full_stream], received


async def test_a_detector_judges_tool_call_arguments_once_and_blocks() -> None:
    model = routed_detector(judge)
    received: list[Any] = []
    agent = make_agent(PIIDetector(model=model, strategy="block"), received, streamed_args=True)
    output = await agent.stream("mail jane")
    chunks = [c async for c in output.full_stream]
    assert chunks[-1].type == "tripwire" and received == []
    assert not [c for c in chunks if c.type == "tool-call-delta"]  # held until the verdict
    assert len(model.calls) == 1  # the whole call, in one detector call
    result = await make_agent(PIIDetector(model=model, strategy="block"), received).generate("mail jane")
    assert result.tripwire is not None and result.tripwire.metadata == {"types": ["email"]}
    assert received == []


async def test_a_detector_redacts_tool_call_arguments_and_their_streamed_text() -> None:
    chunks, received = await run_with(
        PIIDetector(model=routed_detector(judge), redaction_method="placeholder")
    )
    call = next(c for c in chunks if c.type == "tool-call")
    assert call.payload.args == {"to": "[EMAIL]", "body": "hello"} and received == [ARGS]
    kinds = [c.type for c in chunks]
    assert kinds.index("tool-call-input-streaming-start") < kinds.index("tool-call-delta")
    assert (
        kinds.index("tool-call-delta")
        < kinds.index("tool-call-input-streaming-end")
        < kinds.index("tool-call")
    )
    streamed = "".join(c.payload.args_text_delta for c in chunks if c.type == "tool-call-delta")
    assert json.loads(streamed) == {"to": "[EMAIL]", "body": "hello"}


async def test_filter_refuses_a_tool_call_with_pii_the_tool_never_runs_and_the_model_reads_why() -> None:
    chunks, received = await run_with(PIIDetector(model=routed_detector(judge), strategy="filter"))
    kinds = [c.type for c in chunks]
    assert received == [] and "tool-call-delta" not in kinds and kinds[-1] == "finish"
    (call,) = [c for c in chunks if c.type == "tool-call"]
    assert call.payload.args == {}  # the flagged arguments are shown to no one
    assert EMAIL not in json.dumps([c.to_dict() for c in chunks], default=str)
    (denied,) = [c for c in chunks if c.type == "tool-output-denied"]
    assert denied.payload.processor_id == "pii-detector" and "PIIDetector flagged" in denied.payload.reason
    assert "done" in "".join(c.payload.text for c in chunks if c.type == "text-delta")  # the run went on


async def test_warn_reports_tool_call_arguments_and_lets_the_call_run() -> None:
    guard = PIIDetector(model=routed_detector(judge), strategy="warn")
    reports: list[ProcessorViolation] = []
    guard.on_violation = reports.append
    chunks, received = await run_with(guard)
    assert received == [ARGS] and [r.detail["types"] for r in reports] == [["email"]]
    # warn releases optimistically: the argument deltas were not held for the verdict
    assert (
        json.loads("".join(c.payload.args_text_delta for c in chunks if c.type == "tool-call-delta")) == ARGS
    )


async def test_arguments_without_pii_cost_one_detector_call_and_stream_unchanged() -> None:
    model = routed_detector(lambda prompt: {})
    chunks, received = await run_with(PIIDetector(model=model, strategy="block"))
    assert received == [ARGS] and chunks[-1].type == "finish"
    deltas = [c.payload.args_text_delta for c in chunks if c.type == "tool-call-delta"]
    assert len(deltas) > 1 and json.loads("".join(deltas)) == ARGS  # released as they came
    assert sum("jane.roe" in str(call.prompt) for call in model.calls) == 1


async def test_a_number_or_a_key_in_tool_call_arguments_is_pii_too() -> None:
    for arguments in ({"card": 4111111111111111}, {EMAIL: "primary"}):
        received: list[Any] = []

        async def send(args: Any, context: Any, received: list[Any] = received) -> str:
            received.append(args)
            return "sent"

        tool = create_tool(id="send", description="Send", input_schema={"type": "object"}, execute=send)
        agent = Agent(
            name="m",
            model=MockModel([tool_call_step(("c1", "send", arguments)), text_step("done")]),
            tools=[tool],
            output_processors=[PIIDetector(strategy="block")],
        )
        result = await agent.generate("go")
        assert result.tripwire is not None and received == [], arguments


@pytest.mark.parametrize("offline", [True, False], ids=["offline", "detector"])
async def test_an_approval_card_shows_the_redacted_arguments(offline: bool) -> None:
    guard = (
        PIIDetector(redaction_method="placeholder")
        if offline
        else PIIDetector(model=routed_detector(judge), redaction_method="placeholder")
    )
    received: list[Any] = []
    output = await make_agent(guard, received).stream("mail jane", require_tool_approval=True)
    chunks = [c async for c in output.full_stream]
    card = next(c for c in chunks if c.type == "tool-call-approval")
    assert card.payload.args == {"to": "[EMAIL]", "body": "hello"} and received == []
    assert EMAIL not in json.dumps([c.to_dict() for c in chunks], default=str)


async def test_numbers_and_keys_in_tool_results_are_redacted_too() -> None:
    async def lookup(args: Any, context: Any) -> dict[str, Any]:
        return {"card": 4111111111111111, "contacts": {EMAIL: "primary"}, "count": 2}

    tool = create_tool(id="lookup", description="Look up", input_schema={"type": "object"}, execute=lookup)
    model = MockModel([tool_call_step(("c1", "lookup", {})), text_step("done")])
    agent = Agent(
        name="m", model=model, tools=[tool], output_processors=[PIIDetector(redaction_method="placeholder")]
    )
    output = await agent.stream("look")
    chunks = [c async for c in output.full_stream]
    result = next(c for c in chunks if c.type == "tool-result").payload.result
    assert result == {"card": "[CREDIT-CARD]", "contacts": {"[EMAIL]": "primary"}, "count": 2}
    assert "4111111111111111" not in str(model.calls[1].prompt) and EMAIL not in str(model.calls[1].prompt)
