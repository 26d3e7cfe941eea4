"""`sluicegate.processor.outcome` says what a hook decided, whichever way it returned it."""

from __future__ import annotations

from typing import Any

import pytest
from tests.tracing.helpers import by_name

from sluicegate import Agent, create_tool
from sluicegate.messages import Message
from sluicegate.processors import Processor
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tracing import Telemetry


def _same_messages(args: Any) -> Any:
    return [Message.from_dict(m.to_dict()) for m in args.message_list.get.all.db()]


def _changed_messages(args: Any) -> Any:
    return [*args.messages, Message.coerce_many("an extra note")[0]]


def _in_place(args: Any) -> None:
    message = args.message_list.get.input.db()[0]
    message.content.parts[0]["text"] = "rewritten"
    message.content.content = "rewritten"


INPUT_CASES = [
    ("returns None", lambda args: None, "pass"),
    ("returns the message list", lambda args: args.message_list, "pass"),
    ("returns equal messages", _same_messages, "pass"),
    ("returns more messages", _changed_messages, "modified"),
    ("rewrites a message in place", _in_place, "modified"),
    (
        "adds a system message",
        lambda args: {"system_messages": [{"role": "system", "content": "be brief"}]},
        "modified",
    ),
    ("returns a number", lambda args: 42, "error"),
]


@pytest.mark.parametrize(("case", "hook", "outcome"), INPUT_CASES, ids=[c[0] for c in INPUT_CASES])
async def test_input_outcomes(telemetry: Telemetry, case: str, hook: Any, outcome: str) -> None:
    class Probe(Processor):
        id = "probe"

        def process_input(self, args: Any) -> Any:
            return hook(args)

    agent = Agent("o", model=MockModel([text_step("ok")]), input_processors=[Probe()])
    output = await agent.stream("hello there")
    await output.consume()
    (span,) = by_name(telemetry.spans(), "processor probe input")
    assert span.attributes["sluicegate.processor.outcome"] == outcome


STEP_CASES = [
    ("no change", lambda args: None, "pass"),
    ("same tool choice", lambda args: {"tool_choice": args.tool_choice}, "pass"),
    ("new tool choice", lambda args: {"tool_choice": "none"}, "modified"),
]


@pytest.mark.parametrize(("case", "hook", "outcome"), STEP_CASES, ids=[c[0] for c in STEP_CASES])
async def test_input_step_outcomes(telemetry: Telemetry, case: str, hook: Any, outcome: str) -> None:
    class Probe(Processor):
        id = "probe"

        def process_input_step(self, args: Any) -> Any:
            return hook(args)

    agent = Agent("o", model=MockModel([text_step("ok")]), input_processors=[Probe()])
    await agent.generate("hi")
    (span,) = by_name(telemetry.spans(), "processor probe input_step")
    assert span.attributes["sluicegate.processor.outcome"] == outcome


REQUEST_CASES = [
    ("no change", lambda args: None, "pass"),
    ("same prompt", lambda args: {"prompt": list(args.prompt)}, "pass"),
    (
        "new prompt",
        lambda args: {"prompt": [{"role": "system", "content": "terse"}, *args.prompt]},
        "modified",
    ),
    ("a response", lambda args: {"response": text_step("cached")}, "modified"),
]


@pytest.mark.parametrize(("case", "hook", "outcome"), REQUEST_CASES, ids=[c[0] for c in REQUEST_CASES])
async def test_llm_request_outcomes(telemetry: Telemetry, case: str, hook: Any, outcome: str) -> None:
    class Probe(Processor):
        id = "probe"

        def process_llm_request(self, args: Any) -> Any:
            return hook(args)

    agent = Agent("o", model=MockModel([text_step("ok")]), input_processors=[Probe()])
    await agent.generate("hi")
    spans = telemetry.spans()
    (span,) = by_name(spans, "processor probe llm_request")
    assert span.attributes["sluicegate.processor.outcome"] == outcome
    (chat,) = by_name(spans, "chat mock-model-id")
    assert chat.attributes.get("sluicegate.response.replayed", False) is (case == "a response")


TOOL_CASES = [
    ("no change", lambda args: None, "pass"),
    ("the same result", lambda args: {"result": dict(args.result)}, "pass"),
    ("a new result", lambda args: {"result": "replaced"}, "modified"),
]


@pytest.mark.parametrize(("case", "hook", "outcome"), TOOL_CASES, ids=[c[0] for c in TOOL_CASES])
async def test_tool_result_outcomes(telemetry: Telemetry, case: str, hook: Any, outcome: str) -> None:
    class Probe(Processor):
        id = "probe"

        def process_tool_result(self, args: Any) -> Any:
            return hook(args)

    async def execute(input: Any, context: Any) -> dict[str, Any]:
        return {"value": 1}

    tool = create_tool(id="t", description="d", input_schema={"type": "object"}, execute=execute)
    model = MockModel([tool_call_step(("c1", "t", {})), text_step("done")])
    agent = Agent("o", model=model, tools=[tool], output_processors=[Probe()])
    await agent.generate("hi")
    (span,) = by_name(telemetry.spans(), "processor probe tool_result")
    assert span.attributes["sluicegate.processor.outcome"] == outcome
