"""Every rule of the processor runner (see docs/processors.md)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sluicegate import Agent, RequestContext
from sluicegate.errors import APICallError, ProcessorError
from sluicegate.messages import Message, MessageList
from sluicegate.processors import ProcessAPIErrorResult, ProcessInputStepResult, Processor
from sluicegate.processors.args import ProcessLLMRequestResult
from sluicegate.stream import Chunk, Payload
from sluicegate.testing import MockModel, text_step, tool_call_step

from .helpers import collect, prompt_texts, types, weather_tool


class Recorder(Processor):
    """Logs every hook call into a shared list."""

    def __init__(self, log: list[str], id: str = "recorder") -> None:
        super().__init__()
        self.id = id
        self.log = log

    def process_input(self, args):
        self.log.append("input")

    async def process_input_step(self, args):
        self.log.append(f"input_step:{args.step_number}")

    def process_llm_request(self, args):
        self.log.append(f"llm_request:{args.step_number}")

    def process_llm_response(self, args):
        self.log.append(f"llm_response:{args.step_number}")

    async def process_output_stream(self, args):
        if args.part.type == "tool-result":
            self.log.append("stream:tool-result")
        return args.part

    def process_output_step(self, args):
        self.log.append(f"output_step:{args.step_number}")

    async def process_output_result(self, args):
        self.log.append("output_result")


async def test_hooks_run_in_pipeline_order_once_or_per_step():
    log: list[str] = []

    async def execute(input, context):
        log.append("tool")
        return {"ok": True}

    from sluicegate import create_tool

    probe = create_tool(id="weather", description="", input_schema={"type": "object"}, execute=execute)
    recorder = Recorder(log)
    model = MockModel([tool_call_step(("c1", "weather", {})), text_step("done")])
    await Agent(
        "a", model=model, tools=[probe], input_processors=[recorder], output_processors=[recorder]
    ).generate("x")
    assert log == [
        "input",
        "input_step:0",
        "llm_request:0",
        "output_step:0",
        "llm_response:0",
        "tool",
        "stream:tool-result",
        "input_step:1",
        "llm_request:1",
        "output_step:1",
        "llm_response:1",
        "output_result",
    ]


class SwitchModel(Processor):
    id = "switch"

    def __init__(self, model):
        super().__init__()
        self.model = model

    def process_input_step(self, args):
        return ProcessInputStepResult(
            model=self.model, tool_choice="required", model_settings={"temperature": 0.1}
        )


class SeeAndAdjust(Processor):
    id = "see"

    def __init__(self):
        super().__init__()
        self.seen: list[Any] = []

    async def process_input_step(self, args):
        self.seen.append((args.model.model_id, args.tool_choice, args.model_settings))
        return {"provider_options": {"p": {"x": 1}}, "active_tools": ["weather"]}


async def test_input_step_results_chain_from_processor_to_processor():
    first = MockModel([text_step("never")], model_id="first")
    second = MockModel([text_step("second answers")], model_id="second")
    seer = SeeAndAdjust()
    agent = Agent("a", model=first, tools=[weather_tool()], input_processors=[SwitchModel(second), seer])
    result = await agent.generate("x")
    assert result.text == "second answers"
    assert first.calls == []
    assert seer.seen == [("second", "required", {"temperature": 0.1})]
    call = second.calls[0]
    assert call.tool_choice == {"type": "required"}
    assert call.temperature == 0.1
    assert call.provider_options == {"p": {"x": 1}}


class ReplaceTools(Processor):
    id = "replace-tools"

    def process_input_step(self, args):
        from sluicegate import create_tool

        return {
            "tools": {
                "lookup": create_tool(
                    id="lookup",
                    description="l",
                    input_schema={"type": "object"},
                    execute=lambda i, c: "found",
                )
            }
        }


async def test_input_step_can_replace_tools_for_the_step():
    model = MockModel([tool_call_step(("c1", "lookup", {})), text_step("ok")])
    result = await Agent(
        "a", model=model, tools=[weather_tool()], input_processors=[ReplaceTools()]
    ).generate("x")
    assert [t["name"] for t in model.calls[0].tools] == ["lookup"]
    assert result.tool_results[0].payload.result == "found"


class TrimToLastUser(Processor):
    id = "trim"

    def process_input_step(self, args):
        return [m for m in args.messages if m.role == "user"][-1:]


async def test_input_step_returning_messages_replaces_the_steps_messages():
    model = MockModel([text_step("ok")])
    await Agent("a", model=model, input_processors=[TrimToLastUser()]).generate(["old", "new"])
    assert prompt_texts(model.calls[0].prompt) == [("user", "new")]


async def test_prepare_step_runs_after_input_processors_sync_or_async():
    seen = []

    def prepare(args):
        seen.append(args.tool_choice)
        return {"system_messages": [{"role": "system", "content": f"step {args.step_number}"}]}

    model = MockModel([text_step("ok")])
    await Agent(
        "a", instructions="base", model=model, tools=[weather_tool()], input_processors=[SwitchModel(model)]
    ).generate("x", prepare_step=prepare)
    assert seen == ["required"]
    assert prompt_texts(model.calls[0].prompt)[0] == ("system", "step 0")


class AddStepSystem(Processor):
    id = "add-step-system"

    def process_input_step(self, args):
        args.message_list.add_system(f"note {args.step_number}")
        return args.message_list


async def test_system_messages_reset_at_every_step():
    model = MockModel([tool_call_step(("c1", "weather", {"city": "A"})), text_step("ok")])
    await Agent(
        "a", instructions="base", model=model, tools=[weather_tool()], input_processors=[AddStepSystem()]
    ).generate("x")
    systems = [[c for r, c in prompt_texts(call.prompt) if r == "system"] for call in model.calls]
    assert systems == [["base", "note 0"], ["base", "note 1"]]


class Cache(Processor):
    """Short-circuits with a canned response; records from_cache."""

    id = "canned"

    def __init__(self):
        super().__init__()
        self.from_cache: list[bool] = []

    def process_llm_request(self, args):
        args.state["asked"] = True
        chunks = [
            Chunk("text-start", payload=Payload(id="t")),
            Chunk("text-delta", payload=Payload(id="t", text="cached")),
            Chunk("text-end", payload=Payload(id="t")),
            Chunk(
                "finish",
                payload=Payload(
                    step_result=Payload(reason="stop"),
                    output=Payload(usage={"inputTokens": 4, "outputTokens": 2}),
                ),
            ),
        ]
        return ProcessLLMRequestResult(response=chunks)

    def process_llm_response(self, args):
        assert args.state["asked"]
        self.from_cache.append(args.from_cache)


async def test_llm_request_response_short_circuits_the_model_call():
    model = MockModel([text_step("live")])
    cache = Cache()
    output = await Agent("a", model=model, input_processors=[cache]).stream("x")
    chunks = await collect(output)
    assert model.calls == []
    assert await output.text == "cached"
    assert (await output.usage).total_tokens == 6
    assert cache.from_cache == [True]
    assert types(chunks)[-2:] == ["step-finish", "finish"]


class LLMRequestPrompt(Processor):
    id = "prompt-rewrite"

    def process_llm_request(self, args):
        return {"prompt": [*args.prompt, {"role": "user", "content": [{"type": "text", "text": "extra"}]}]}


async def test_llm_request_rewrites_are_never_persisted():
    model = MockModel([text_step("ok")])
    result = await Agent("a", model=model, input_processors=[LLMRequestPrompt()]).generate("x")
    assert prompt_texts(model.calls[0].prompt)[-1] == ("user", "extra")
    assert [m.text for m in result.response.messages] == ["ok"]


class ErrorFixer(Processor):
    def __init__(self, id: str, log: list[str], retry: bool = False, explode: bool = False):
        super().__init__()
        self.id = id
        self.log = log
        self.retry = retry
        self.explode = explode

    def process_api_error(self, args):
        self.log.append(f"{self.id}:{args.retry_count}:{type(args.error).__name__}")
        if self.explode:
            raise RuntimeError("handler broke")
        if self.retry:
            args.message_list.add("please retry", "input")
            return ProcessAPIErrorResult(retry=True)
        return None


async def test_api_error_runs_input_then_output_then_error_processors_and_first_retry_wins(caplog):
    log: list[str] = []
    model = MockModel([APICallError("rejected", status_code=400), text_step("recovered")])
    agent = Agent(
        "a",
        model=model,
        input_processors=[ErrorFixer("in", log, explode=True)],
        output_processors=[ErrorFixer("out", log)],
        error_processors=[ErrorFixer("err", log, retry=True), ErrorFixer("late", log, retry=True)],
    )
    with caplog.at_level(logging.WARNING):
        output = await agent.stream("x")
        chunks = await collect(output)
    assert log == ["in:0:APICallError", "out:0:APICallError", "err:0:APICallError"]
    assert "handler broke" in caplog.text
    assert [c.payload.step_result.reason for c in chunks if c.type == "step-finish"] == ["retry", "stop"]
    assert await output.text == "recovered"
    assert prompt_texts(model.calls[1].prompt)[-1] == ("user", "please retry")


async def test_api_error_retries_default_to_ten_and_respect_the_cap():
    log: list[str] = []
    errors = [APICallError("rejected", status_code=400) for _ in range(20)]
    model = MockModel(errors)
    with pytest.raises(APICallError):
        await Agent("a", model=model, error_processors=[ErrorFixer("e", log, retry=True)]).generate("x")
    assert len(model.calls) == 11
    model = MockModel(errors)
    with pytest.raises(APICallError):
        await Agent("a", model=model, error_processors=[ErrorFixer("e", log, retry=True)]).generate(
            "x", max_processor_retries=2
        )
    assert len(model.calls) == 3


class StreamAbortRetry(Processor):
    id = "stream-abort"

    def process_output_stream(self, args):
        if args.part.type == "text-delta":
            args.abort("no", retry=True)
        return args.part


class Dropper(Processor):
    id = "dropper"

    def process_output_stream(self, args):
        return None if args.part.type == "text-delta" and "x" in args.part.payload.text else args.part


async def test_tool_results_pass_through_output_stream_processors():
    class Tag(Processor):
        id = "tag"

        def process_output_stream(self, args):
            if args.part.type == "tool-result":
                args.part.payload.result = {"tagged": args.part.payload.result}
            return args.part

    model = MockModel([tool_call_step(("c1", "weather", {"city": "Oslo"})), text_step("ok")])
    output = await Agent("a", model=model, tools=[weather_tool()], output_processors=[Tag()]).stream("x")
    chunks = await collect(output)
    [result] = [c for c in chunks if c.type == "tool-result"]
    assert result.payload.result == {"tagged": {"city": "Oslo", "forecast": "sunny"}}


async def test_a_stream_processor_may_return_several_chunks():
    class Split(Processor):
        id = "split"

        def process_output_stream(self, args):
            part = args.part
            if part.type == "text-delta" and len(part.payload.text) > 1:
                return [
                    Chunk("text-delta", payload=Payload(id=part.payload.id, text=ch))
                    for ch in part.payload.text
                ]
            return part

    class Upper(Processor):
        id = "upper"

        def process_output_stream(self, args):
            if args.part.type == "text-delta":
                args.part.payload.text = args.part.payload.text.upper()
            return args.part

    output = await Agent(
        "a", model=MockModel([text_step("abc")]), output_processors=[Split(), Upper()]
    ).stream("x")
    deltas = [c.payload.text for c in await collect(output) if c.type == "text-delta"]
    assert deltas == ["A", "B", "C"]
    assert await output.text == "ABC"


class BlockAtStep(Processor):
    id = "step-guard"

    def process_output_step(self, args):
        if args.tool_calls:
            args.abort("no tools allowed", metadata={"calls": len(args.tool_calls)})


async def test_abort_in_output_step_runs_no_tools_and_ends_with_a_tripwire():
    ran = []
    from sluicegate import create_tool

    probe = create_tool(
        id="weather", description="", input_schema={"type": "object"}, execute=lambda i, c: ran.append(1)
    )
    model = MockModel([tool_call_step(("c1", "weather", {}))])
    output = await Agent("a", model=model, tools=[probe], output_processors=[BlockAtStep()]).stream("x")
    chunks = await collect(output)
    assert ran == []
    assert chunks[-1].type == "tripwire"
    assert chunks[-1].payload.metadata == {"calls": 1}
    assert "step-finish" not in types(chunks)
    assert await output.finish_reason == "other"


HOOKS_THAT_ABORT = [
    "process_input",
    "process_input_step",
    "process_llm_request",
    "process_llm_response",
    "process_output_stream",
    "process_output_step",
    "process_output_result",
    "process_api_error",
]


def aborting(hook: str) -> Processor:
    def abort(self, args):
        args.abort(f"stop in {hook}", metadata={"hook": hook})

    cls = type(f"Abort_{hook}", (Processor,), {"id": f"abort-{hook}", hook: abort})
    return cls()


@pytest.mark.parametrize("hook", HOOKS_THAT_ABORT)
async def test_abort_in_every_hook_gives_a_tripwire_and_calls_on_violation(hook):
    processor = aborting(hook)
    violations = []
    processor.on_violation = violations.append
    steps: list[Any] = (
        [APICallError("x", status_code=400)] if hook == "process_api_error" else [text_step("t")]
    )
    kwargs = {
        "error_processors"
        if hook == "process_api_error"
        else "output_processors"
        if hook.startswith("process_output")
        else "input_processors": [processor]
    }
    agent = Agent("a", model=MockModel(steps), **kwargs)
    output = await agent.stream("x")
    chunks = await collect(output)
    assert chunks[-1].type == "tripwire"
    assert chunks[-1].payload.processor_id == f"abort-{hook}"
    assert "finish" not in types(chunks)
    assert (await output.tripwire).reason == f"stop in {hook}"
    assert [(v.processor_id, v.message, v.detail) for v in violations] == [
        (f"abort-{hook}", f"stop in {hook}", {"hook": hook})
    ]
    result = await Agent("a", model=MockModel(steps), **kwargs).generate("x")
    assert (
        result.finish_reason == "other"
        and result.text == ""
        and result.tripwire.processor_id == f"abort-{hook}"
    )


async def test_on_violation_errors_are_swallowed():
    processor = aborting("process_input")

    def explode(violation):
        raise RuntimeError("monitoring down")

    processor.on_violation = explode
    result = await Agent("a", model=MockModel([]), input_processors=[processor]).generate("x")
    assert result.tripwire is not None


class InputRetry(Processor):
    id = "input-retry"

    def __init__(self):
        super().__init__()
        self.counts: list[int] = []

    def process_input_step(self, args):
        self.counts.append(args.retry_count)
        if args.retry_count < 2:
            args.abort(f"attempt {args.retry_count}", retry=True)


async def test_input_step_retry_replays_with_feedback_without_reaching_the_model():
    processor = InputRetry()
    model = MockModel([text_step("ok")])
    output = await Agent("a", model=model, input_processors=[processor], max_processor_retries=5).stream("x")
    chunks = await collect(output)
    assert processor.counts == [0, 1, 2]
    assert len(model.calls) == 1
    assert types(chunks).count("step-start") == 1
    feedback = [c for r, c in prompt_texts(model.calls[0].prompt) if r == "system"]
    assert len(feedback) == 2 and "attempt 1" in feedback[1]


async def test_retries_are_aborts_without_a_cap_and_default_to_ten_with_error_processors():
    processor = InputRetry()
    result = await Agent("a", model=MockModel([text_step("ok")]), input_processors=[processor]).generate("x")
    assert result.tripwire is not None and result.tripwire.retry is True
    processor = InputRetry()

    class Noop(Processor):
        id = "noop"

        def process_api_error(self, args):
            return None

    result = await Agent(
        "a", model=MockModel([text_step("ok")]), input_processors=[processor], error_processors=[Noop()]
    ).generate("x")
    assert result.text == "ok"


async def test_stream_abort_with_retry_is_an_abort():
    output = await Agent(
        "a",
        model=MockModel([text_step("t")]),
        output_processors=[StreamAbortRetry()],
        max_processor_retries=3,
    ).stream("x")
    chunks = await collect(output)
    assert chunks[-1].type == "tripwire" and chunks[-1].payload.retry is True


async def test_dropping_a_chunk_drops_only_that_chunk():
    steps = [
        [
            {"type": "text-start", "id": "t"},
            *({"type": "text-delta", "id": "t", "delta": d} for d in "axbxc"),
            {"type": "text-end", "id": "t"},
            {"type": "finish", "finishReason": "stop", "usage": {}},
        ]
    ]
    output = await Agent("a", model=MockModel(steps), output_processors=[Dropper()]).stream("x")
    assert await output.text == "abc"


class StateUser(Processor):
    def __init__(self, id: str, seen: list[Any]):
        super().__init__()
        self.id = id
        self.seen = seen

    def process_input(self, args):
        args.state["n"] = args.state.get("n", 0) + 1

    def process_output_result(self, args):
        self.seen.append((self.id, dict(args.state)))


async def test_state_is_per_processor_id_per_request_and_shared_across_hooks():
    seen: list[Any] = []
    a, b = StateUser("a", seen), StateUser("b", seen)
    agent = Agent(
        "x",
        model=MockModel([text_step("1"), text_step("2")]),
        input_processors=[a, b],
        output_processors=[a, b],
    )
    await agent.generate("x")
    await agent.generate("x")
    assert seen == [("a", {"n": 1}), ("b", {"n": 1}), ("a", {"n": 1}), ("b", {"n": 1})]


class BadWriter(Processor):
    id = "bad-writer"

    async def process_output_result(self, args):
        await args.writer.custom({"type": "progress", "data": {}})


async def test_writer_custom_requires_the_data_prefix_and_names_the_processor():
    output = await Agent("a", model=MockModel([text_step("t")]), output_processors=[BadWriter()]).stream("x")
    chunks = await collect(output)
    assert chunks[-1].type == "error"
    error = chunks[-1].payload.error
    assert isinstance(error, ProcessorError) and error.processor_id == "bad-writer"
    assert "data-" in str(error)
    with pytest.raises(ProcessorError, match="bad-writer"):
        await Agent("a", model=MockModel([text_step("t")]), output_processors=[BadWriter()]).generate("x")


class OtherList(Processor):
    id = "other-list"

    def process_input(self, args):
        return MessageList()


class AddAndDrop(Processor):
    id = "add-drop"

    def process_input(self, args):
        kept = [m for m in args.messages if m.text != "drop me"]
        return {
            "messages": [*kept, Message.text_message("user", "added")],
            "system_messages": [{"role": "system", "content": "replaced"}],
        }


async def test_returned_messages_are_reconciled_and_a_foreign_message_list_is_an_error():
    model = MockModel([text_step("ok")])
    await Agent("a", instructions="orig", model=model, input_processors=[AddAndDrop()]).generate(
        ["keep", "drop me"]
    )
    assert prompt_texts(model.calls[0].prompt) == [
        ("system", "replaced"),
        ("user", "keep"),
        ("user", "added"),
    ]
    with pytest.raises(ProcessorError, match="different MessageList"):
        await Agent("a", model=MockModel([text_step("ok")]), input_processors=[OtherList()]).generate("x")


async def test_in_place_edits_of_messages_are_seen_downstream_and_persisted():
    class Redact(Processor):
        id = "redact"

        def process_input(self, args):
            for message in args.messages:
                for part in message.content.parts:
                    if part.type == "text":
                        part.text = part.text.replace("secret", "[x]")

    model = MockModel([text_step("ok")])
    agent = Agent("a", model=model, input_processors=[Redact()])
    output = await agent.stream("my secret")
    await output.consume()
    assert prompt_texts(model.calls[0].prompt) == [("user", "my [x]")]


async def test_processor_arrays_may_be_callables_and_per_call_arrays_replace_the_agents():
    log: list[str] = []
    seen_context = []

    def inputs(request_context: RequestContext):
        seen_context.append(request_context.get("tenant"))
        return [Recorder(log, "from-callable")]

    agent = Agent("a", model=MockModel([text_step("1"), text_step("2")]), input_processors=inputs)
    await agent.generate("x", request_context=RequestContext({"tenant": "t1"}))
    assert seen_context == ["t1"] and log[0] == "input"
    log.clear()
    await agent.generate("x", input_processors=[])
    assert log == []


async def test_send_signal_reaches_the_model_is_stored_and_hidden_from_ui():
    class Remind(Processor):
        id = "remind"

        async def process_input_step(self, args):
            if args.step_number == 0:
                await args.send_signal(
                    {"type": "reactive", "contents": "Last step.", "attributes": {"step": 1}}
                )

    captured = []

    class Capture(Processor):
        id = "capture"

        def process_output_result(self, args):
            captured.append(args.message_list)

    model = MockModel([text_step("ok")])
    await Agent("a", model=model, input_processors=[Remind()], output_processors=[Capture()]).generate("x")
    assert prompt_texts(model.calls[0].prompt)[-1] == (
        "user",
        '<system-reminder step="1">Last step.</system-reminder>',
    )
    message_list = captured[0]
    assert any("system-reminder" in m.text for m in message_list.get.input.db())
    assert not any("system-reminder" in str(m) for m in message_list.get.all.ui())


async def test_processor_index_is_given_per_request_in_the_args():
    seen: dict[str, int | None] = {}

    class Indexed(Processor):
        def __init__(self, id: str) -> None:
            super().__init__()
            self.id = id

        def process_input(self, args):
            seen[self.id] = args.processor_index

    first, second = Indexed("one"), Indexed("two")
    await Agent("a", model=MockModel([text_step("ok")]), input_processors=[first, second]).generate("x")
    assert seen == {"one": 0, "two": 1}
    assert (first.processor_index, second.processor_index) == (None, None)  # shared objects untouched


async def test_non_tripwire_exceptions_name_the_processor():
    class Broken(Processor):
        id = "broken"

        async def process_output_stream(self, args):
            raise KeyError("oops")

    output = await Agent("a", model=MockModel([text_step("ok")]), output_processors=[Broken()]).stream("x")
    chunks = await collect(output)
    assert chunks[-1].type == "error"
    assert "broken" in str(chunks[-1].payload.error) and "process_output_stream" in str(
        chunks[-1].payload.error
    )


async def test_output_step_retry_replays_with_feedback_and_counts_retries():
    class Picky(Processor):
        id = "picky"

        def __init__(self):
            super().__init__()
            self.counts = []

        def process_output_step(self, args):
            self.counts.append((args.retry_count, args.step_number))
            if "bad" in args.text:
                args.abort("too bad", retry=True)
            return []

    picky = Picky()
    model = MockModel([text_step("bad"), text_step("bad again"), text_step("good")])
    result = await Agent("a", model=model, output_processors=[picky], max_processor_retries=5).generate("x")
    assert result.text == "good"
    assert picky.counts == [(0, 0), (1, 1), (2, 2)]
    assert [s.finish_reason for s in result.steps] == ["retry", "retry", "stop"]
    assert result.usage.total_tokens == 45
    assert all(r != "assistant" for r, _ in prompt_texts(model.calls[2].prompt))


async def test_data_parts_reach_only_opted_in_processors():
    class Sees(Processor):
        def __init__(self, id: str, opt_in: bool, seen: list[str]):
            super().__init__()
            self.id = id
            self.process_data_parts = opt_in
            self.seen = seen

        def process_output_stream(self, args):
            if args.part.type.startswith("data-"):
                self.seen.append(self.id)
            return args.part

    from sluicegate import create_tool

    async def emit(input, context):
        await context.writer.custom({"type": "data-x", "data": 1})
        return 1

    seen: list[str] = []
    model = MockModel([tool_call_step(("c1", "emit", {})), text_step("ok")])
    agent = Agent(
        "a",
        model=model,
        tools=[create_tool(id="emit", description="", input_schema={"type": "object"}, execute=emit)],
        output_processors=[Sees("no", False, seen), Sees("yes", True, seen)],
    )
    await agent.generate("x")
    assert seen == ["yes"]


async def test_llm_response_learns_whether_the_output_step_accepted_the_step():
    seen = []

    class Watch(Processor):
        id = "watch"

        def process_llm_response(self, args):
            seen.append((args.step_number, args.accepted))

    class RejectFirst(Processor):
        id = "reject-first"

        def process_output_step(self, args):
            if args.retry_count == 0:
                args.abort("again", retry=True)

    model = MockModel([text_step("one"), text_step("two")])
    agent = Agent(
        "a",
        model=model,
        input_processors=[Watch()],
        output_processors=[RejectFirst()],
        max_processor_retries=1,
    )
    assert (await agent.generate("x")).text == "two"
    assert seen == [(0, False), (1, True)]


async def test_llm_response_sees_the_model_chunks_as_the_model_sent_them():
    seen = []

    class Watch(Processor):
        id = "watch"

        def process_llm_response(self, args):
            seen.extend(c.payload.text for c in args.chunks if c.type == "text-delta")

    class UpperInPlace(Processor):
        id = "upper"

        def process_output_stream(self, args):
            if args.part.type == "text-delta":
                args.part.payload.text = args.part.payload.text.upper()
            return args.part

    result = await Agent(
        "a",
        model=MockModel([text_step("quiet", pieces=2)]),
        input_processors=[Watch()],
        output_processors=[UpperInPlace()],
    ).generate("x")
    assert result.text == "QUIET"
    assert "".join(seen) == "quiet"
