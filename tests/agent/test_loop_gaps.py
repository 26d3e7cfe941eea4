"""Gaps between the runtime and the documents (and Mastra's recorded behaviour), one test each."""

from __future__ import annotations

import json
import logging
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluicegate import Agent, create_tool
from sluicegate.agent.step import MAX_ARGS_DEPTH, UnparsedArgs, parse_args
from sluicegate.errors import APICallError, SluicegateError
from sluicegate.memory import Memory
from sluicegate.processors import (
    ErrorProcessor,
    InputProcessor,
    OutputProcessor,
    PrefillErrorHandler,
    Processor,
    ProcessorStepSchema,
)
from sluicegate.storage import SQLiteStore
from sluicegate.stream import Chunk
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.workflows import create_step, create_workflow

from .helpers import OBJECT, collect, types, weather_tool

PREFILL = (
    "This model does not support assistant message prefill. The conversation must end with a user message."
)


class RejectFirst(Processor):
    """Asks for one retry of the first step it sees."""

    id = "reject-first"

    def process_output_step(self, args):
        if args.retry_count == 0:
            args.abort("too short", retry=True)


# ---------------------------------------------------------------- 1. retry_count in the stream


async def test_process_output_stream_sees_the_current_retry_count():
    seen: list[int] = []

    class Watch(Processor):
        id = "watch"

        def process_output_stream(self, args):
            if args.part.type == "text-delta":
                seen.append(args.retry_count)
            return args.part

    model = MockModel([text_step("first"), text_step("second")])
    agent = Agent("a", model=model, output_processors=[Watch(), RejectFirst()], max_processor_retries=3)
    result = await agent.generate("hi")
    assert result.text == "second"
    assert seen == [0, 1]


# ---------------------------------------------------------------- 2. async on_violation


async def test_an_async_on_violation_is_awaited():
    received: list[Any] = []

    class Block(Processor):
        id = "block"

        async def on_violation(self, violation):
            received.append((violation.processor_id, violation.message, violation.detail))

        def process_input(self, args):
            args.abort("no", metadata={"why": "test"})

    result = await Agent("a", model=MockModel([text_step("x")]), input_processors=[Block()]).generate("hi")
    assert result.tripwire is not None
    assert received == [("block", "no", {"why": "test"})]


async def test_a_failing_async_on_violation_is_logged_not_raised(caplog: pytest.LogCaptureFixture):
    class Block(Processor):
        id = "block"

        async def on_violation(self, violation):
            raise RuntimeError("alert service down")

        def process_input(self, args):
            args.abort("no")

    with caplog.at_level(logging.WARNING, logger="sluicegate.processors"):
        result = await Agent("a", model=MockModel([text_step("x")]), input_processors=[Block()]).generate(
            "hi"
        )
    assert result.tripwire is not None and result.tripwire.reason == "no"
    assert any("on_violation" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_an_async_on_violation_inside_a_workflow_is_awaited():
    received: list[str] = []

    class Block(Processor):
        id = "block"

        async def on_violation(self, violation):
            received.append(violation.message)

        def process_input(self, args):
            args.abort("blocked in workflow")

    workflow = create_workflow(id="wf").then(create_step(Block())).commit()
    await Agent("a", model=MockModel([text_step("x")]), input_processors=[workflow]).generate("hi")
    assert received == ["blocked in workflow"]


# ---------------------------------------------------------------- 3. PrefillErrorHandler auto-injected


async def test_prefill_rejection_is_recovered_without_configuration():
    model = MockModel([APICallError(PREFILL, status_code=400), text_step("recovered")])
    output = await Agent("a", model=model).stream("hi")
    chunks = await collect(output)
    reminders = [c for c in chunks if c.type == "data-system-reminder"]
    assert len(reminders) == 1
    assert reminders[0].data == {
        "message": "Retrying after Anthropic prefill error",
        "reminderType": "anthropic-prefill-processor-retry",
    }
    assert reminders[0].to_dict()["transient"] is True
    assert await output.text == "recovered"
    last_user = model.calls[1].prompt[-1]
    assert last_user["role"] == "user"
    assert last_user["content"][0]["text"] == "<system-reminder>continue</system-reminder>"


async def test_auto_error_processors_false_opts_out():
    model = MockModel([APICallError(PREFILL, status_code=400), text_step("never")])
    with pytest.raises(APICallError):
        await Agent("a", model=model, auto_error_processors=False).generate("hi")
    assert len(model.calls) == 1


async def test_the_auto_handler_runs_last_and_is_not_added_twice():
    order: list[str] = []

    class First(Processor):
        id = "first"

        def process_api_error(self, args):
            order.append("first")

    handler = PrefillErrorHandler()
    model = MockModel([APICallError(PREFILL, status_code=400), text_step("ok")])
    result = await Agent("a", model=model, error_processors=[First(), handler]).generate("hi")
    assert result.text == "ok"
    assert order == ["first"]
    model = MockModel([APICallError(PREFILL, status_code=400), text_step("ok")])
    assert (await Agent("a", model=model, error_processors=[First()]).generate("hi")).text == "ok"


async def test_the_auto_handler_does_not_turn_on_guardrail_retries():
    model = MockModel([text_step("first"), text_step("second")])
    result = await Agent("a", model=model, output_processors=[RejectFirst()]).generate("hi")
    assert result.tripwire is not None and result.tripwire.retry is True
    assert len(model.calls) == 1


# ---------------------------------------------------------------- 4. metadata on the finish chunk


async def test_metadata_added_in_process_output_result_is_on_the_finish_chunk():
    class Stamp(Processor):
        id = "stamp"

        def process_output_result(self, args):
            for message in args.messages:
                if message.role == "assistant":
                    message.content.metadata = {**(message.content.metadata or {}), "customData": "yes"}
            return args.messages

    output = await Agent("a", model=MockModel([text_step("hello")]), output_processors=[Stamp()]).stream("hi")
    chunks = await collect(output)
    finish = chunks[-1]
    assert finish.type == "finish"
    assistant = next(m for m in finish.payload.response.ui_messages if m["role"] == "assistant")
    assert assistant["metadata"]["customData"] == "yes"
    wire = finish.to_dict()["payload"]["response"]["uiMessages"]
    assert any(m.get("metadata", {}).get("customData") == "yes" for m in wire)
    assert Chunk.from_dict(json.loads(json.dumps(finish.to_dict()))).payload.response.ui_messages == wire


# ---------------------------------------------------------------- 6. schema and type aliases


async def test_processor_step_schema_and_aliases_for_the_workflow_example():
    workflow = (
        create_workflow(id="moderation", input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)
        .then(create_step(id="tag", execute=lambda data: ProcessorStepSchema(**data).model_dump()))
        .commit()
    )
    inputs: list[InputProcessor] = [workflow]
    outputs: list[OutputProcessor] = []
    errors: list[ErrorProcessor] = [PrefillErrorHandler()]
    agent = Agent(
        "a",
        model=MockModel([text_step("ok")]),
        input_processors=inputs,
        output_processors=outputs,
        error_processors=errors,
    )
    assert (await agent.generate("hi")).text == "ok"
    data = ProcessorStepSchema(phase="process_input", messages=[], custom=1)
    assert data.phase == "process_input" and data.model_dump()["custom"] == 1
    with pytest.raises(pydantic.ValidationError):
        ProcessorStepSchema(messages=[])


# ---------------------------------------------------------------- 7. data parts from processors, signals


async def test_opt_in_processors_see_data_chunks_written_by_other_processors():
    collected: list[Any] = []
    not_opted: list[str] = []

    class Moderator(Processor):
        id = "moderator"

        async def process_output_stream(self, args):
            if args.part.type == "text-delta":
                await args.writer.custom({"type": "data-moderation", "data": {"level": "warn"}})
            return args.part

    class Collector(Processor):
        id = "moderation-collector"
        process_data_parts = True

        def process_output_stream(self, args):
            if args.part.type == "data-moderation":
                collected.append(args.part.data)
            return args.part

    class Plain(Processor):
        id = "plain"

        def process_output_stream(self, args):
            not_opted.append(args.part.type)
            return args.part

    agent = Agent(
        "a", model=MockModel([text_step("hi")]), output_processors=[Moderator(), Collector(), Plain()]
    )
    output = await agent.stream("x")
    chunks = await collect(output)
    assert collected == [{"level": "warn"}]
    assert "data-moderation" not in not_opted
    assert "data-moderation" in types(chunks)


async def test_recall_hides_signal_messages_unless_asked():
    class Remind(Processor):
        id = "remind"

        async def process_input(self, args):
            await args.send_signal({"type": "reactive", "contents": "be brief"})

    store = SQLiteStore(":memory:")
    agent = Agent(
        "a", model=MockModel([text_step("answer")]), memory=Memory(storage=store), input_processors=[Remind()]
    )
    await agent.generate("question", memory={"thread": "t1", "resource": "u1"})
    memory = agent.memory
    assert isinstance(memory, Memory)
    visible = await memory.recall("t1", resource_id="u1")
    everything = await memory.recall("t1", resource_id="u1", include_signals=True)
    assert [m.text for m in visible] == ["question", "answer"]
    assert len(everything) == 3
    assert [m.text for m in await memory.recall("t1", resource_id="u1", last=1)] == ["answer"]


# ---------------------------------------------------------------- 8. exhausted API-error retries


async def test_exhausted_api_error_retries_end_with_step_finish_and_finish():
    class AlwaysRetry(Processor):
        id = "always-retry"

        def process_api_error(self, args):
            return {"retry": True}

    errors = [APICallError("overloaded", status_code=529, is_retryable=True) for _ in range(3)]
    agent = Agent(
        "a", model=MockModel(errors), error_processors=[AlwaysRetry()], max_processor_retries=2, max_retries=0
    )
    output = await agent.stream("hi")
    chunks = await collect(output)
    assert types(chunks)[-3:] == ["error", "step-finish", "finish"]
    assert chunks[-2].payload.step_result.reason == "error"
    assert chunks[-1].payload.step_result.reason == "error"
    assert await output.finish_reason == "error"
    with pytest.raises(APICallError):
        await Agent(
            "a",
            model=MockModel(list(errors)),
            error_processors=[AlwaysRetry()],
            max_processor_retries=2,
            max_retries=0,
        ).generate("hi")


# ---------------------------------------------------------------- 9. output-result abort: text once


async def test_an_output_result_abort_does_not_double_the_streamed_text():
    class Veto(Processor):
        id = "veto"

        def process_output_result(self, args):
            args.abort("not today")

    output = await Agent("a", model=MockModel([text_step("Hello")]), output_processors=[Veto()]).stream("hi")
    chunks = await collect(output)
    assert types(chunks)[-1] == "tripwire"
    assert await output.text == "Hello"


# ---------------------------------------------------------------- 10. feedback after step system messages


async def test_retry_feedback_comes_after_the_steps_own_system_messages():
    class StepSystem(Processor):
        id = "step-system"

        def process_input_step(self, args):
            return {"system_messages": [*args.system_messages, {"role": "system", "content": "step rule"}]}

    model = MockModel([text_step("first"), text_step("second")])
    agent = Agent(
        "a",
        instructions="base",
        model=model,
        input_processors=[StepSystem()],
        output_processors=[RejectFirst()],
        max_processor_retries=2,
    )
    assert (await agent.generate("hi")).text == "second"
    systems = [m["content"] for m in model.calls[1].prompt if m["role"] == "system"]
    assert systems[:2] == ["base", "step rule"]
    assert systems[2].startswith("[Processor Feedback]") and "too short" in systems[2]
    assert len(systems) == 3


# ---------------------------------------------------------------- 16. structured_output shapes


class City(pydantic.BaseModel):
    name: str


CITY_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@pytest.mark.parametrize(
    ("structured_output", "expected"),
    [
        (CITY_SCHEMA, {"name": "Paris"}),
        ({"schema": CITY_SCHEMA}, {"name": "Paris"}),
        (City, City(name="Paris")),
        ({"schema": City}, City(name="Paris")),
    ],
)
async def test_structured_output_accepts_a_schema_dict_a_model_or_a_schema_wrapper(
    structured_output, expected
):
    model = MockModel([text_step('{"name": "Paris"}')])
    result = await Agent("a", model=model).generate("city?", structured_output=structured_output)
    assert result.object == expected
    assert model.calls[0].response_format["schema"]["properties"]["name"]["type"] == "string"


@pytest.mark.parametrize("bad", ["City", {"schema": City, "strict": True}, {"schema": "City"}])
async def test_structured_output_rejects_what_is_not_a_schema_before_calling_the_model(bad: Any):
    model = MockModel([text_step("{}")])
    with pytest.raises(SluicegateError, match="structured_output"):
        await Agent("a", model=model).generate("x", structured_output=bad)
    assert model.calls == []


# ---------------------------------------------------------------- 21. malformed tool calls


def _weather_then_answer(tool_call: dict[str, Any]) -> MockModel:
    return MockModel(
        [
            [
                {"type": "stream-start", "warnings": []},
                tool_call,
                {
                    "type": "finish",
                    "finishReason": "tool-calls",
                    "usage": {"inputTokens": 1, "outputTokens": 1},
                },
            ],
            text_step("sorry"),
        ]
    )


def _tool_outputs(model: MockModel) -> list[dict[str, Any]]:
    return [p["output"] for m in model.calls[1].prompt if m["role"] == "tool" for p in m["content"]]


async def test_a_tool_call_without_a_tool_name_is_a_tool_error_the_model_sees():
    model = _weather_then_answer({"type": "tool-call", "toolCallId": "c1", "input": '{"city": "Paris"}'})
    output = await Agent("a", model=model, tools=[weather_tool()]).stream("hi")
    chunks = await collect(output)
    assert "tool-error" in types(chunks)
    assert await output.text == "sorry"
    outputs = _tool_outputs(model)
    assert outputs[0]["type"] == "error-text" and "names no tool" in outputs[0]["value"]
    call = next(c for c in chunks if c.type == "tool-call")
    assert call.payload.tool_name == "unknown-tool"  # providers reject an empty name in the history


async def test_a_tool_name_that_is_not_a_string_is_a_tool_error():
    model = _weather_then_answer({"type": "tool-call", "toolCallId": "c1", "toolName": 7, "input": "{}"})
    result = await Agent("a", model=model, tools=[weather_tool()]).generate("hi")
    assert result.text == "sorry"
    assert "names no tool" in _tool_outputs(model)[0]["value"]


@pytest.mark.parametrize("depth", [200, 100_000])
async def test_arguments_nested_too_deeply_are_a_tool_error_not_a_dead_run(depth: int):
    calls: list[Any] = []

    async def execute(input, context):
        calls.append(input)
        return "ran"

    tool = create_tool(id="deep", description="d", input_schema={"type": "object"}, execute=execute)
    nested = '{"a": ' * depth + "1" + "}" * depth
    model = _weather_then_answer(
        {"type": "tool-call", "toolCallId": "c1", "toolName": "deep", "input": nested}
    )
    result = await Agent("a", model=model, tools=[tool]).generate("hi")
    assert result.text == "sorry"
    assert calls == []
    outputs = _tool_outputs(model)
    assert outputs[0]["type"] == "error-text" and "nested deeper" in outputs[0]["value"]


async def test_well_formed_tool_calls_still_run():
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Paris"})), text_step("sunny")])
    result = await Agent("a", model=model, tools=[weather_tool()]).generate("hi")
    assert result.tool_results[0].payload.result == {"city": "Paris", "forecast": "sunny"}
    assert OBJECT["required"] == ["city"]


async def test_an_async_on_violation_of_a_warning_guardrail_is_run():
    from sluicegate.processors import RegexFilter

    received: list[str] = []

    async def alert(violation):
        received.append(violation.processor_id)

    guard = RegexFilter(presets=["pii"], strategy="warn")
    guard.on_violation = alert
    agent = Agent("a", model=MockModel([text_step("ok")]), input_processors=[guard])
    result = await agent.generate("mail me at ada@example.com")
    assert result.text == "ok"
    assert received == [guard.id]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=20,
)


@given(value=_JSON, wrap=st.integers(min_value=0, max_value=3000))
@settings(max_examples=60, deadline=None)
def test_parse_args_never_raises_and_refuses_only_what_is_too_deep(value: Any, wrap: int):
    raw = "[" * wrap + json.dumps(value) + "]" * wrap
    parsed = parse_args(raw)
    depth = wrap + _container_depth(value)  # levels of lists and objects, as MAX_ARGS_DEPTH counts
    if isinstance(parsed, UnparsedArgs):
        assert parsed == raw and "nested deeper" in parsed.reason
        assert depth > MAX_ARGS_DEPTH
    else:
        expected = value
        for _ in range(wrap):
            expected = [expected]
        assert parsed == expected
        assert depth <= MAX_ARGS_DEPTH


def _container_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_container_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_container_depth, value), default=0)
    return 0


@pytest.mark.parametrize("levels", [MAX_ARGS_DEPTH, MAX_ARGS_DEPTH + 1])
def test_parse_args_depth_limit_is_inclusive(levels: int) -> None:
    raw = "[" * levels + "1" + "]" * levels
    assert isinstance(parse_args(raw), UnparsedArgs) is (levels > MAX_ARGS_DEPTH)
