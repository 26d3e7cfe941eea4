"""The agent loop: generate / stream / generate_sync, steps, usage, tools, results."""

from __future__ import annotations

import asyncio
import json

import pydantic
import pytest

from sluicegate import Agent, RequestContext, ToolContext, create_tool, tool
from sluicegate.errors import APICallError, ConfigurationError, SluicegateError
from sluicegate.testing import MockModel, text_step, tool_call_step

from .helpers import collect, types, weather_tool


async def test_generate_returns_text_usage_steps_and_response_messages():
    model = MockModel([text_step("Hello there", input_tokens=7, output_tokens=3)])
    agent = Agent("a", instructions="Be nice.", model=model)
    result = await agent.generate("Hi")
    assert result.text == "Hello there"
    assert result.finish_reason == "stop"
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.total_tokens) == (7, 3, 10)
    assert [s.text for s in result.steps] == ["Hello there"]
    assert result.tripwire is None
    assert [m.role for m in result.response.messages] == ["assistant"]
    stored = result.response.messages[0].content.parts[-1]  # dated where the part was made
    dated = {"mastra": {"createdAt": stored["createdAt"]}}
    assert result.response.ui_messages[0]["parts"][-1] == {
        "type": "text",
        "text": "Hello there",
        "providerMetadata": dated,
    }
    assert model.calls[0].prompt == [
        {"role": "system", "content": "Be nice."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
    ]


async def test_stream_yields_chunks_in_order_and_awaitable_results():
    agent = Agent("a", model=MockModel([text_step("abc", pieces=3)]))
    output = await agent.stream("Hi")
    chunks = await collect(output)
    assert types(chunks) == [
        "start",
        "step-start",
        "text-start",
        "text-delta",
        "text-delta",
        "text-delta",
        "text-end",
        "step-finish",
        "finish",
    ]
    assert await output.text == "abc"
    assert await output.finish_reason == "stop"
    assert (await output.usage).total_tokens == 15
    assert len(await output.steps) == 1
    assert all(c.run_id == output.run_id for c in chunks)


async def test_awaiting_a_result_drives_the_stream_and_full_stream_is_single_use():
    output = await Agent("a", model=MockModel([text_step("abc")])).stream("Hi")
    assert await output.text == "abc"
    with pytest.raises(SluicegateError):
        output.full_stream  # noqa: B018


async def test_text_stream_yields_only_text():
    output = await Agent("a", model=MockModel([text_step("abcd", pieces=2)])).stream("Hi")
    assert [t async for t in output.text_stream] == ["ab", "cd"]


def test_generate_sync_works_without_and_inside_an_event_loop():
    agent = Agent("a", model=MockModel([text_step("one"), text_step("two")]))
    assert agent.generate_sync("Hi").text == "one"

    async def inside() -> str:
        return agent.generate_sync("Hi").text

    assert asyncio.run(inside()) == "two"


async def test_tool_loop_sums_usage_and_feeds_results_back():
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Paris"})), text_step("Sunny")])
    result = await Agent("a", model=model, tools=[weather_tool()]).generate("Weather?")
    assert result.text == "Sunny"
    assert [s.finish_reason for s in result.steps] == ["tool-calls", "stop"]
    assert result.usage.total_tokens == 30
    assert [c.payload.tool_name for c in result.tool_calls] == ["weather"]
    assert result.tool_results[0].payload.result == {"city": "Paris", "forecast": "sunny"}
    tool_message = model.calls[1].prompt[-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"][0]["output"] == {
        "type": "json",
        "value": {"city": "Paris", "forecast": "sunny"},
    }
    assert model.calls[0].tools[0]["name"] == "weather"
    assert model.calls[0].tool_choice == {"type": "auto"}


async def test_max_steps_stops_the_loop_and_defaults_to_five():
    steps = [tool_call_step((f"c{i}", "weather", {"city": "X"})) for i in range(7)]
    model = MockModel(steps)
    result = await Agent("a", model=model, tools=[weather_tool()]).generate("go")
    assert len(model.calls) == 5
    assert result.finish_reason == "tool-calls"
    model = MockModel(steps)
    await Agent("a", model=model, tools=[weather_tool()]).generate("go", max_steps=2)
    assert len(model.calls) == 2


async def test_tool_choice_none_sends_no_tools_and_active_tools_filters():
    other = create_tool(id="other", description="x", input_schema={"type": "object"}, execute=lambda i, c: 1)
    model = MockModel([text_step("a"), text_step("b"), text_step("c")])
    agent = Agent("a", model=model, tools=[weather_tool(), other])
    await agent.generate("x", tool_choice="none")
    await agent.generate("x", active_tools=["other"])
    await agent.generate("x", tool_choice={"type": "tool", "tool_name": "weather"})
    assert model.calls[0].tools == [] and model.calls[0].tool_choice is None
    assert [t["name"] for t in model.calls[1].tools] == ["other"]
    assert model.calls[2].tool_choice == {"type": "tool", "toolName": "weather"}


async def test_pydantic_tool_validates_input_and_streams_custom_data():
    class Input(pydantic.BaseModel):
        city: str
        days: int = 1

    async def forecast(input: Input, context: ToolContext) -> dict:
        await context.writer.custom({"type": "data-progress", "data": {"city": input.city}})
        assert context.tool_call_id == "c1"
        assert context.request_context.get("user") == "u1"
        return {"days": input.days}

    forecast_tool = create_tool(id="forecast", description="d", input_schema=Input, execute=forecast)
    model = MockModel([tool_call_step(("c1", "forecast", {"city": "Oslo", "days": 3})), text_step("ok")])
    context = RequestContext({"user": "u1"})
    output = await Agent("a", model=model, tools={"forecast": forecast_tool}).stream(
        "x", request_context=context
    )
    chunks = await collect(output)
    assert types(chunks)[2:5] == ["tool-call", "data-progress", "tool-result"]
    assert chunks[3].data == {"city": "Oslo"}
    assert chunks[4].payload.result == {"days": 3}
    assert model.calls[0].tools[0]["inputSchema"]["properties"]["days"]["default"] == 1


async def test_decorated_tool_takes_schema_from_signature():
    @tool
    async def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    assert add.id == "add" and add.description == "Add two numbers."
    assert add.json_schema()["required"] == ["a"]
    model = MockModel([tool_call_step(("c1", "add", {"a": 40})), text_step("42")])
    result = await Agent("a", model=model, tools=[add]).generate("sum")
    assert result.tool_results[0].payload.result == 42


async def test_a_raising_tool_gives_a_tool_error_the_model_sees():
    async def broken(input, context):
        raise RuntimeError("disk on fire")

    boom = create_tool(id="boom", description="", input_schema={"type": "object"}, execute=broken)
    model = MockModel([tool_call_step(("c1", "boom", {})), text_step("sorry")])
    output = await Agent("a", model=model, tools=[boom]).stream("x")
    chunks = await collect(output)
    errors = [c for c in chunks if c.type == "tool-error"]
    assert len(errors) == 1 and "disk on fire" in str(errors[0].payload.error)
    assert chunks[-1].type == "finish"
    result = model.calls[1].prompt[-1]["content"][0]
    assert result["output"] == {"type": "error-text", "value": "disk on fire"}


async def test_invalid_tool_input_and_unknown_tools_are_reported_to_the_model():
    model = MockModel(
        [
            tool_call_step(("c1", "weather", {"town": "Paris"}), ("c2", "nope", {})),
            text_step("fine"),
        ]
    )
    result = await Agent("a", model=model, tools=[weather_tool()]).generate("x")
    assert result.text == "fine"
    outputs = {p["toolCallId"]: p["output"] for p in model.calls[1].prompt[-1]["content"]}
    assert outputs["c1"]["type"] == "error-text" and "city" in outputs["c1"]["value"]
    assert outputs["c2"]["type"] == "error-text" and "not available" in outputs["c2"]["value"]


async def test_to_model_output_is_what_the_model_sees():
    rich = create_tool(
        id="rich",
        description="",
        input_schema={"type": "object"},
        execute=lambda i, c: {"rows": list(range(100))},
        to_model_output=lambda r: {"type": "text", "value": f"{len(r['rows'])} rows"},
    )
    model = MockModel([tool_call_step(("c1", "rich", {})), text_step("done")])
    result = await Agent("a", model=model, tools=[rich]).generate("x")
    assert model.calls[1].prompt[-1]["content"][0]["output"] == {"type": "text", "value": "100 rows"}
    assert result.tool_results[0].payload.result == {"rows": list(range(100))}


async def test_unrecovered_model_error_raises_from_generate_and_ends_stream_with_error():
    error = APICallError("bad request", status_code=400)
    with pytest.raises(APICallError, match="bad request"):
        await Agent("a", model=MockModel([error])).generate("x")
    output = await Agent("a", model=MockModel([error])).stream("x")
    chunks = await collect(output)
    assert types(chunks) == ["start", "step-start", "error", "step-finish", "finish"]
    assert chunks[2].payload.error is error
    assert chunks[3].payload.step_result.reason == "error"
    assert chunks[4].payload.step_result.reason == "error"
    assert await output.error is error
    assert await output.finish_reason == "error"


async def test_an_error_part_inside_the_stream_is_an_api_error():
    parts = [
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "par"},
        {"type": "error", "error": {"message": "overloaded", "code": "server_error"}},
    ]
    output = await Agent("a", model=MockModel([parts])).stream("x")
    chunks = await collect(output)
    assert types(chunks)[-4:] == ["text-delta", "error", "step-finish", "finish"]
    assert isinstance(chunks[-3].payload.error, APICallError)
    assert chunks[-3].payload.error.data == {"message": "overloaded", "code": "server_error"}


async def test_structured_output_parses_into_the_schema():
    class City(pydantic.BaseModel):
        name: str
        population: int

    model = MockModel([text_step(json.dumps({"name": "Oslo", "population": 700000}))])
    result = await Agent("a", model=model).generate("x", structured_output={"schema": City})
    assert result.object == City(name="Oslo", population=700000)
    assert model.calls[0].response_format["type"] == "json"
    assert model.calls[0].response_format["schema"]["title"] == "City"


async def test_model_settings_and_provider_options_reach_the_model():
    model = MockModel([text_step("x")])
    await Agent("a", model=model).generate(
        "x",
        model_settings={"temperature": 0.2, "max_output_tokens": 9},
        provider_options={"openai": {"reasoningEffort": "low"}},
    )
    call = model.calls[0]
    assert (call.temperature, call.max_output_tokens) == (0.2, 9)
    assert call.provider_options == {"openai": {"reasoningEffort": "low"}}


@pytest.mark.parametrize(
    "options",
    [
        {"max_steps": 0},
        {"tool_choice": "sometimes"},
        {"max_processor_retries": -1},
        {"model_settings": {"warp": 9}},
        {"unknown_option": 1},
    ],
)
async def test_bad_options_are_clear_errors(options):
    with pytest.raises((SluicegateError, TypeError)):
        await Agent("a", model=MockModel([text_step("x")])).generate("x", **options)


def test_bad_agent_configuration_is_a_clear_error():
    with pytest.raises(ConfigurationError):
        Agent("a", model=MockModel([]), input_processors="nope")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Agent("a", model=MockModel([]), max_processor_retries=-2)
    with pytest.raises(SluicegateError):
        Agent("a", model="nosuchprovider/model")  # resolved lazily; the call fails clearly
        asyncio.run(Agent("a", model="nosuchprovider/model").generate("x"))
