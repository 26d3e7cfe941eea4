"""`ProcessorRunner` built directly: one failure rule for every hook, one rule for dict returns,
the optional hooks found by override, and one per-chunk pipeline traced or not."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from sluicegate.errors import (
    AccessDeniedError,
    ConfigurationError,
    IdentityMismatchError,
    ProcessorError,
    TripWire,
    UnknownResultKeyError,
)
from sluicegate.messages import Message, MessageList
from sluicegate.processors import Processor
from sluicegate.processors.args import OutputResult, ProcessorViolation, ProcessOutputStreamArgs
from sluicegate.processors.base import implements, optional_hook
from sluicegate.processors.runner import ProcessorRunner, StepConfig
from sluicegate.processors.stream_counts import PipelineCounts, TextTrack
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk, text_delta

RUN = "run-1"


def runner(*output: Any, inputs: tuple[Any, ...] = (), traced: _Counts | None = None) -> ProcessorRunner:
    built = ProcessorRunner(
        input_processors=list(inputs),
        output_processors=list(output),
        request_context=RequestContext(),
        run_id=RUN,
        emit=lambda chunk: None,
    )
    if traced is not None:
        built.stream_counts = traced.counts_for
    return built


class _Counts:
    """What `sluicegate.tracing` hands a traced runner, without OpenTelemetry."""

    def __init__(self) -> None:
        self.pipelines: dict[tuple[int, ...], PipelineCounts] = {}

    def counts_for(self, entries: list[Any]) -> PipelineCounts:
        key = tuple(id(e) for e in entries)
        if key not in self.pipelines:
            self.pipelines[key] = PipelineCounts(entries, [TextTrack() for _ in entries])
        return self.pipelines[key]


def messages() -> MessageList:
    message_list = MessageList()
    message_list.add(Message(role="user", content="hi"), "input")
    return message_list


HookCall = Callable[[ProcessorRunner, MessageList], Awaitable[Any]]


async def _input(r: ProcessorRunner, ml: MessageList) -> Any:
    return await r.run_input(ml)


async def _input_step(r: ProcessorRunner, ml: MessageList) -> Any:
    config = StepConfig(model=None, tools={})
    return await r.run_input_step(ml, config, step_number=0, steps=[], resolve=lambda name, value: value)


async def _llm_request(r: ProcessorRunner, ml: MessageList) -> Any:
    return await r.run_llm_request([], model=None, tools=[], step_number=0, steps=[], message_list=ml)


async def _llm_response(r: ProcessorRunner, ml: MessageList) -> Any:
    return await r.run_llm_response(
        [], model=None, step_number=0, steps=[], from_cache=False, message_list=ml
    )


async def _api_error(r: ProcessorRunner, ml: MessageList) -> Any:
    return await r.run_api_error(RuntimeError("down"), message_list=ml, step_number=0, steps=[], model=None)


async def _output_stream(r: ProcessorRunner, ml: MessageList) -> Any:
    pipeline = r.stream_pipeline(ml)
    assert pipeline is not None
    return await pipeline(text_delta(RUN, "t", "hello"))


async def _flush(r: ProcessorRunner, ml: MessageList) -> Any:
    r.stream_pipeline(ml)
    return await r.flush_stream()


async def _deadline(r: ProcessorRunner, ml: MessageList) -> Any:
    r.stream_pipeline(ml)
    return await r.run_stream_deadlines()


async def _output_step(r: ProcessorRunner, ml: MessageList) -> Any:
    return await r.run_output_step(
        ml, step_number=0, finish_reason="stop", tool_calls=[], text="", usage=None, steps=[]
    )


async def _output_result(r: ProcessorRunner, ml: MessageList) -> Any:
    return await r.run_output_result(ml, OutputResult(text="", usage=None, finish_reason="stop", steps=[]))


async def _tool_result(r: ProcessorRunner, ml: MessageList) -> Any:
    return await r.run_tool_result(
        {"ok": 1},
        tool_name="t",
        tool_call_id="c",
        tool_args={},
        provider_executed=False,
        step_number=0,
        steps=[],
        message_list=ml,
    )


async def _tool_call(r: ProcessorRunner, ml: MessageList) -> Any:
    return await r.run_tool_call(
        {"a": 1}, tool_name="t", tool_call_id="c", step_number=0, steps=[], message_list=ml
    )


CALLS: dict[str, HookCall] = {
    "process_input": _input,
    "process_input_step": _input_step,
    "process_llm_request": _llm_request,
    "process_llm_response": _llm_response,
    "process_api_error": _api_error,
    "process_output_stream": _output_stream,
    "flush_output_stream": _flush,
    "on_stream_deadline": _deadline,
    "process_output_step": _output_step,
    "process_output_result": _output_result,
    "process_tool_result": _tool_result,
    "process_tool_call": _tool_call,
}


def raising(hook: str, exc: BaseException, *, is_async: bool = False) -> Processor:
    """A processor whose `hook` raises `exc` (a due `stream_deadline` for the deadline hook)."""

    def fail(self: Any, args: Any) -> Any:
        raise exc

    async def afail(self: Any, args: Any) -> Any:
        raise exc

    members: dict[str, Any] = {"id": f"raises-in-{hook}", hook: afail if is_async else fail}
    if hook in ("flush_output_stream", "on_stream_deadline"):
        members["process_output_stream"] = lambda self, args: args.part
    if hook == "on_stream_deadline":
        members["stream_deadline"] = lambda self, state: time.monotonic() - 1
    return type(f"Raises_{hook}", (Processor,), members)()


def placed(processor: Processor, hook: str) -> ProcessorRunner:
    return (
        runner(inputs=(processor,)) if hook in ("process_input", "process_input_step") else runner(processor)
    )


@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize("hook", list(CALLS))
async def test_access_denied_passes_through_every_hook_unwrapped(hook: str, is_async: bool) -> None:
    denied = IdentityMismatchError("resource", "someone-else")
    processor = raising(hook, denied, is_async=is_async)
    with pytest.raises(AccessDeniedError) as raised:
        await CALLS[hook](placed(processor, hook), messages())
    assert raised.value is denied
    assert not isinstance(raised.value, ProcessorError)


@pytest.mark.parametrize("hook", [h for h in CALLS if h != "process_api_error"])
async def test_any_other_failure_is_a_processor_error_naming_processor_and_hook(hook: str) -> None:
    processor = raising(hook, KeyError("boom"))
    with pytest.raises(ProcessorError) as raised:
        await CALLS[hook](placed(processor, hook), messages())
    assert raised.value.processor_id == f"raises-in-{hook}"
    assert raised.value.hook == hook
    assert f"failed in {hook}" in str(raised.value)
    assert isinstance(raised.value.__cause__, KeyError)


async def test_a_failing_error_processor_is_logged_and_the_next_one_asked() -> None:
    class Retry(Processor):
        id = "retry"

        def process_api_error(self, args: Any) -> dict[str, Any]:
            return {"retry": True}

    built = runner(raising("process_api_error", KeyError("boom")), Retry())
    assert await _api_error(built, messages()) is True


@pytest.mark.parametrize("hook", [h for h in CALLS if h != "process_api_error"])
async def test_a_tripwire_passes_tagged_after_on_violation_heard_it(hook: str) -> None:
    heard: list[ProcessorViolation] = []
    processor = raising(hook, TripWire("no"))
    processor.on_violation = heard.append
    with pytest.raises(TripWire) as raised:
        await CALLS[hook](placed(processor, hook), messages())
    assert raised.value.processor_id == f"raises-in-{hook}"
    assert [v.message for v in heard] == ["no"]


# ---------------------------------------------------------------------- dict returns


def returning(hook: str, value: Any) -> Processor:
    members: dict[str, Any] = {"id": f"returns-from-{hook}", hook: lambda self, args: value}
    return type(f"Returns_{hook}", (Processor,), members)()


DICT_HOOKS = [
    "process_input",
    "process_input_step",
    "process_llm_request",
    "process_api_error",
    "process_output_step",
    "process_output_result",
    "process_tool_result",
    "process_tool_call",
]


@pytest.mark.parametrize("hook", DICT_HOOKS)
async def test_an_unknown_key_in_any_dict_return_is_refused_with_a_suggestion(hook: str) -> None:
    processor = returning(hook, {"mesages": []})
    with pytest.raises(UnknownResultKeyError, match=r"'mesages'") as raised:
        await CALLS[hook](placed(processor, hook), messages())
    assert isinstance(raised.value, ProcessorError) and isinstance(raised.value, ConfigurationError)
    assert raised.value.processor_id == f"returns-from-{hook}" and raised.value.hook == hook


@pytest.mark.parametrize("hook", DICT_HOOKS)
async def test_an_empty_dict_changes_nothing(hook: str) -> None:
    processor = returning(hook, {})
    ml = messages()
    before = [m.content for m in ml.get.all.db()]
    result = await CALLS[hook](placed(processor, hook), ml)
    assert [m.content for m in ml.get.all.db()] == before
    if hook == "process_tool_result":
        assert result == {"ok": 1}
    if hook == "process_tool_call":
        assert result == {"a": 1}
    if hook == "process_api_error":
        assert result is False


async def test_a_dict_is_read_as_its_result_object_in_both_spellings() -> None:
    ml = messages()
    system = [{"role": "system", "content": "be brief"}]
    await _output_step(runner(returning("process_output_step", {"systemMessages": system})), ml)
    assert ml.get_system_messages() == system
    assert await _tool_result(runner(returning("process_tool_result", {"result": None})), ml) is None
    assert await _tool_call(runner(returning("process_tool_call", {"args": {"b": 2}})), ml) == {"b": 2}
    assert await _api_error(runner(returning("process_api_error", {"retry": True})), ml) is True
    prompt, response = await _llm_request(runner(returning("process_llm_request", {"response": []})), ml)
    assert prompt == [] and response == []


# ---------------------------------------------------------------------- optional hooks


class Plain(Processor):
    id = "plain"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
        return args.part


class Holding(Plain):
    id = "holding"

    def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        return [text_delta(RUN, "t", "held")]

    def stream_deadline(self, state: dict[str, Any]) -> float | None:
        return state.get("due")

    def max_output_tokens_for(self, state: dict[str, Any]) -> int | None:
        return 12


def test_optional_hooks_are_found_by_override_not_by_presence() -> None:
    for hook in ("flush_output_stream", "stream_deadline", "max_output_tokens_for", "suspend_state"):
        assert hasattr(Plain(), hook)  # declared on the base class
        assert not implements(Plain(), hook) and optional_hook(Plain(), hook) is None
    assert implements(Holding(), "flush_output_stream")
    assert not implements(Holding(), "suspend_state")


async def test_the_runner_calls_only_overridden_optional_hooks() -> None:
    plain = runner(Plain())
    plain.stream_pipeline(messages())
    assert not plain.flushes_stream and not plain.uses_stream_deadlines
    assert plain.output_token_cap() is None and await plain.flush_stream() == []

    holding = runner(Holding(), Plain())
    holding.stream_pipeline(messages())
    assert holding.flushes_stream and holding.uses_stream_deadlines
    assert holding.output_token_cap() == 12
    assert holding.next_stream_deadline() is None
    assert [c.payload.text for c in await holding.flush_stream()] == ["held"]


class Duck:
    """Not a `Processor`: what it has is what it implements."""

    id = "duck"

    def process_output_stream(self, args: Any) -> Any:
        return args.part

    def flush_output_stream(self, args: Any) -> list[Chunk]:
        return [text_delta(RUN, "t", "quack")]


async def test_an_object_that_is_not_a_processor_implements_what_it_has() -> None:
    built = runner(Duck())
    built.stream_pipeline(messages())
    assert built.flushes_stream and not built.uses_stream_deadlines
    assert [c.payload.text for c in await built.flush_stream()] == ["quack"]


# ---------------------------------------------------------------------- the per-chunk pipeline


class Upper(Processor):
    id = "upper"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
        chunk = args.part
        if chunk.type != "text-delta":
            return chunk
        return text_delta(RUN, "t", chunk.payload.text.upper())


class Split(Processor):
    id = "split"

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
        chunk = args.part
        if chunk.type == "text-delta" and " " in chunk.payload.text:
            return [
                {"type": "text-delta", "payload": {"id": "t", "text": w}} for w in chunk.payload.text.split()
            ]
        return chunk


class DropX(Processor):
    id = "drop-x"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
        return None if args.part.type == "text-delta" and args.part.payload.text == "X" else args.part


def _texts(result: Any) -> list[str]:
    chunks = result if isinstance(result, list) else [] if result is None else [result]
    return [c.payload.text for c in chunks]


@pytest.mark.parametrize("traced", [False, True])
async def test_one_pipeline_drops_replaces_and_fans_out_alike_traced_or_not(traced: bool) -> None:
    counts = _Counts() if traced else None
    built = runner(Split(), Upper(), DropX(), traced=counts)
    pipeline = built.stream_pipeline(messages())
    assert pipeline is not None
    assert _texts(await pipeline(text_delta(RUN, "t", "a b"))) == ["A", "B"]
    assert _texts(await pipeline(text_delta(RUN, "t", "x"))) == []
    assert _texts(await pipeline(text_delta(RUN, "t", "c"))) == ["C"]
    if counts is not None:
        whole = next(iter(counts.pipelines.values()))  # the first built: all three processors
        assert whole.calls == 3
        assert len(counts.pipelines) == 2  # and the one after `split`, for its fan-out


async def test_a_returned_non_chunk_is_a_processor_error() -> None:
    pipeline = runner(returning("process_output_stream", 42)).stream_pipeline(messages())
    assert pipeline is not None
    with pytest.raises(ProcessorError, match="expected a chunk, a list of chunks or None"):
        await pipeline(text_delta(RUN, "t", "a"))
