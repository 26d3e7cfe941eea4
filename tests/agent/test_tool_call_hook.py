"""`process_tool_call`: changes what one tool receives, and only that."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate import Agent, ToolContext, create_tool
from sluicegate.errors import ProcessorError, ToolCallRefused
from sluicegate.processors import Processor, ProcessToolCallArgs, ProcessToolCallResult
from sluicegate.testing import MockModel, text_step, tool_call_step

from .helpers import collect


def city_tool(received: list[Any]) -> Any:
    async def execute(input: dict[str, Any], context: ToolContext) -> str:
        received.append(dict(input))
        return f"sunny in {input['city']}"

    return create_tool(
        id="weather",
        input_schema={"type": "object", "properties": {"city": {"type": "string", "minLength": 3}}},
        execute=execute,
    )


class Expand(Processor):
    id = "expand"

    def __init__(self, result: Any = None) -> None:
        super().__init__()
        self.result = result
        self.seen: list[tuple[str, str, Any, int]] = []

    def process_tool_call(self, args: ProcessToolCallArgs) -> Any:
        self.seen.append((args.tool_name, args.tool_call_id, args.args, args.step_number))
        if self.result is not None:
            return self.result
        return ProcessToolCallResult(args={"city": {"PA": "Paris"}.get(args.args["city"], args.args["city"])})


async def test_the_tool_receives_the_new_arguments_and_nothing_else_changes() -> None:
    received: list[Any] = []
    hook = Expand()
    model = MockModel([tool_call_step(("c1", "weather", {"city": "PA"})), text_step("ok")])
    agent = Agent("a", model=model, tools=[city_tool(received)], output_processors=[hook])
    output = await agent.stream("weather?")
    chunks = await collect(output)
    assert received == [{"city": "Paris"}]  # validated after the hook: "PA" alone is too short
    assert hook.seen == [("weather", "c1", {"city": "PA"}, 0)]
    assert next(c for c in chunks if c.type == "tool-call").payload.args == {"city": "PA"}
    assert next(c for c in chunks if c.type == "tool-result").payload.args == {"city": "PA"}
    assert '"city": "PA"' in json.dumps(model.calls[1].prompt)
    assert "Paris" not in json.dumps(
        [p for m in model.calls[1].prompt if m["role"] == "assistant" for p in m["content"]]
    )


async def test_a_dict_result_works_and_a_wrong_one_is_a_processor_error() -> None:
    received: list[Any] = []
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Rome"})), text_step("ok")])
    agent = Agent(
        "a", model=model, tools=[city_tool(received)], output_processors=[Expand({"args": {"city": "Oslo"}})]
    )
    await agent.generate("weather?")
    assert received == [{"city": "Oslo"}]

    model = MockModel([tool_call_step(("c1", "weather", {"city": "Rome"})), text_step("ok")])
    agent = Agent("a", model=model, tools=[city_tool(received)], output_processors=[Expand({"argz": {}})])
    try:
        await agent.generate("weather?")
    except ProcessorError as error:
        assert "process_tool_call" in str(error)
    else:
        raise AssertionError("a wrong return was accepted")
    assert received == [{"city": "Oslo"}]  # the tool did not run


async def test_an_abort_in_the_hook_ends_the_run_before_the_tool_runs() -> None:
    class Refuse(Processor):
        id = "refuse"

        def process_tool_call(self, args: ProcessToolCallArgs) -> None:
            args.abort("not this tool")

    received: list[Any] = []
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Rome"})), text_step("ok")])
    agent = Agent("a", model=model, tools=[city_tool(received)], output_processors=[Refuse()])
    result = await agent.generate("weather?")
    assert result.tripwire is not None and result.tripwire.reason == "not this tool"
    assert received == []


class RefuseParis(Processor):
    id = "refuse-paris"

    def process_tool_call(self, args: ProcessToolCallArgs) -> None:
        if args.args.get("city") == "Paris":
            return args.reject("Paris is off limits; answer without it")


class RaiseRefusal(Processor):
    """The same refusal, raised: one mechanism either way."""

    id = "raise-refusal"

    def process_tool_call(self, args: ProcessToolCallArgs) -> None:
        if args.args.get("city") == "Paris":
            raise ToolCallRefused("Paris is off limits; answer without it", processor_id=self.id)


@pytest.mark.parametrize("refuser", [RefuseParis, RaiseRefusal])
async def test_a_refused_call_does_not_run_and_the_model_reads_why(refuser: type[Processor]) -> None:
    received: list[Any] = []
    model = MockModel(
        [
            tool_call_step(("c1", "weather", {"city": "Paris"}), ("c2", "weather", {"city": "Rome"})),
            text_step("Rome is sunny."),
        ]
    )
    agent = Agent(name="a", model=model, tools=[city_tool(received)], output_processors=[refuser()])
    chunks = await collect(await agent.stream("weather?"))
    assert received == [{"city": "Rome"}]
    assert "".join(c.payload.text for c in chunks if c.type == "text-delta") == "Rome is sunny."
    (denied,) = [c for c in chunks if c.type == "tool-output-denied"]
    assert denied.payload.tool_call_id == "c1" and denied.payload.tool_name == "weather"
    assert denied.payload.reason == "Paris is off limits; answer without it"
    assert denied.payload.processor_id == refuser.id
    wire = denied.to_dict()["payload"]
    assert wire["toolCallId"] == "c1" and wire["processorId"] == refuser.id and wire["reason"]
    assert [c.payload.tool_call_id for c in chunks if c.type == "tool-result"] == ["c2"]
    assert not [c for c in chunks if c.type == "tool-error"]
    answered = [m for m in model.calls[1].prompt if m["role"] == "tool"]
    (paris,) = [p for m in answered for p in m["content"] if p["toolCallId"] == "c1"]
    assert paris["output"] == {"type": "error-text", "value": "Paris is off limits; answer without it"}


async def test_reject_without_return_still_refuses() -> None:
    class Forgetful(Processor):
        id = "forgetful"

        def process_tool_call(self, args: ProcessToolCallArgs) -> None:
            args.reject("no")  # the hook forgot `return`: the call is refused all the same

    received: list[Any] = []
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Rome"})), text_step("ok")])
    agent = Agent(name="a", model=model, tools=[city_tool(received)], output_processors=[Forgetful()])
    result = await agent.generate("weather?")
    assert received == [] and result.text == "ok" and result.tripwire is None


@pytest.mark.parametrize("reason", ["", "   ", None, 3])
async def test_reject_needs_a_reason_the_model_can_read(reason: Any) -> None:
    class Mute(Processor):
        id = "mute"

        def process_tool_call(self, args: ProcessToolCallArgs) -> None:
            args.reject(reason)

    received: list[Any] = []
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Rome"})), text_step("ok")])
    agent = Agent(name="a", model=model, tools=[city_tool(received)], output_processors=[Mute()])
    chunks = await collect(await agent.stream("weather?"))
    (error,) = [c for c in chunks if c.type == "error"]
    assert isinstance(error.payload.error, ProcessorError) and "non-empty string" in str(error.payload.error)
    assert received == []  # fails closed: the call did not run


async def test_a_refusal_from_another_hook_ends_the_run_as_a_processor_error() -> None:
    class RefuseInput(Processor):
        id = "refuse-input"

        def process_input(self, args: Any) -> None:
            raise ToolCallRefused("not here", processor_id=self.id)

    agent = Agent(name="a", model=MockModel([text_step("x")]), input_processors=[RefuseInput()])
    output = await agent.stream("hi")
    chunks = await collect(output)
    errors = [c for c in chunks if c.type == "error"]
    assert errors and isinstance(errors[0].payload.error, ProcessorError)
