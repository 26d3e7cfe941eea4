"""`process_tool_result`: after a tool returns, before its result is used anywhere."""

from __future__ import annotations

from typing import Any

from sluicegate import Agent, create_tool
from sluicegate.processors import Processor, ProcessToolResultResult
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.workflows import create_step, create_workflow

from .helpers import OBJECT, collect, types, weather_tool


class Redactor(Processor):
    id = "redactor"

    def __init__(self, seen: list[Any]) -> None:
        super().__init__()
        self.seen = seen

    async def process_tool_result(self, args):
        self.seen.append((args.tool_name, args.tool_call_id, args.tool_args, args.result, args.step_number))
        return ProcessToolResultResult(result={**args.result, "forecast": "[hidden]"})


def _tool_prompt_value(model: MockModel) -> Any:
    tool_message = next(m for m in model.calls[1].prompt if m["role"] == "tool")
    return tool_message["content"][0]["output"]["value"]


async def test_replaced_result_reaches_stream_history_prompt_and_steps():
    seen: list[Any] = []
    model = MockModel(steps=[tool_call_step(("c1", "weather", {"city": "Paris"})), text_step("ok")])
    agent = Agent("a", model=model, tools=[weather_tool()], output_processors=[Redactor(seen)])
    output = await agent.stream("weather?")
    chunks = await collect(output)
    result_chunk = next(c for c in chunks if c.type == "tool-result")
    assert result_chunk.payload.result == {"city": "Paris", "forecast": "[hidden]"}
    assert seen == [
        (
            "weather",
            result_chunk.payload.tool_call_id,
            {"city": "Paris"},
            {"city": "Paris", "forecast": "sunny"},
            0,
        )
    ]
    assert _tool_prompt_value(model) == {"city": "Paris", "forecast": "[hidden]"}
    steps = await output.steps
    assert steps[0].tool_results[0].payload.result["forecast"] == "[hidden]"
    response = await output.response
    invocations = [
        p["toolInvocation"]
        for m in response.messages
        for p in m.content.parts
        if p.get("type") == "tool-invocation"
    ]
    assert invocations[0]["result"] == {"city": "Paris", "forecast": "[hidden]"}


async def test_dict_return_and_chain_order():
    class Add(Processor):
        def __init__(self, pid: str) -> None:
            super().__init__()
            self.id = pid

        def process_tool_result(self, args):
            return {"result": f"{args.result}+{self.id}"}

    async def execute(input, context):
        return "raw"

    tool = create_tool(id="t", description="t", input_schema=OBJECT, execute=execute)
    model = MockModel(steps=[tool_call_step(("c1", "t", {"city": "x"})), text_step("ok")])
    agent = Agent("a", model=model, tools=[tool], output_processors=[Add("one"), Add("two")])
    result = await agent.generate("go")
    assert result.tool_results[0].payload.result == "raw+one+two"
    assert _tool_prompt_value(model) == "raw+one+two"


async def test_none_leaves_result_and_input_processors_are_not_called():
    calls: list[str] = []

    class Watch(Processor):
        def __init__(self, pid: str) -> None:
            super().__init__()
            self.id = pid

        def process_tool_result(self, args):
            calls.append(self.id)

    model = MockModel(steps=[tool_call_step(("c1", "weather", {"city": "Paris"})), text_step("ok")])
    agent = Agent(
        "a",
        model=model,
        tools=[weather_tool()],
        input_processors=[Watch("in")],
        output_processors=[Watch("out")],
    )
    result = await agent.generate("weather?")
    assert calls == ["out"]
    assert result.tool_results[0].payload.result == {"city": "Paris", "forecast": "sunny"}


async def test_abort_ends_stream_with_tripwire_and_no_second_call():
    class Guard(Processor):
        id = "guard"

        def process_tool_result(self, args):
            args.abort("no sun", metadata={"tool": args.tool_name})

    model = MockModel(steps=[tool_call_step(("c1", "weather", {"city": "Paris"})), text_step("never")])
    agent = Agent("a", model=model, tools=[weather_tool()], output_processors=[Guard()])
    output = await agent.stream("weather?")
    chunks = await collect(output)
    assert types(chunks)[-1] == "tripwire"
    assert "tool-result" not in types(chunks)
    assert chunks[-1].payload.processor_id == "guard"
    assert len(model.calls) == 1
    assert (await output.tripwire).reason == "no sun"


async def test_not_called_for_a_tool_that_raised():
    calls: list[Any] = []

    class Watch(Processor):
        id = "watch"

        def process_tool_result(self, args):
            calls.append(args.result)

    async def broken(input, context):
        raise RuntimeError("boom")

    tool = create_tool(id="broken", description="b", input_schema=OBJECT, execute=broken)
    model = MockModel(steps=[tool_call_step(("c1", "broken", {"city": "x"})), text_step("sorry")])
    result = await Agent("a", model=model, tools=[tool], output_processors=[Watch()]).generate("go")
    assert calls == []
    assert result.text == "sorry"


async def test_workflow_runs_tool_result_phase():
    phases: list[str] = []
    seen: list[Any] = []
    workflow = (
        create_workflow(id="wf")
        .then(create_step(Redactor(seen)))
        .map(lambda data: phases.append(data["phase"]) or data)
        .commit()
    )
    model = MockModel(steps=[tool_call_step(("c1", "weather", {"city": "Paris"})), text_step("ok")])
    result = await Agent("a", model=model, tools=[weather_tool()], output_processors=[workflow]).generate(
        "w?"
    )
    assert phases == ["process_tool_result"]
    assert result.tool_results[0].payload.result == {"city": "Paris", "forecast": "[hidden]"}
    assert _tool_prompt_value(model)["forecast"] == "[hidden]"
