"""A hung processor hook ends the run with `ProcessorTimeoutError` instead of hanging it, and
large inputs do not freeze the event loop."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import ConfigurationError, ProcessorError, ProcessorTimeoutError
from sluicegate.memory import Memory
from sluicegate.processors import Processor, RegexFilter
from sluicegate.testing import MockModel, text_step
from sluicegate.tracing import configure

from .conftest import StallMonitor

THREAD = {"thread": "t-hooks", "resource": "u-hooks"}


class HangsOnInput(Processor):
    id = "hangs-on-input"

    async def process_input(self, args: Any) -> Any:
        await asyncio.Event().wait()


class HangsOnSecondChunk(Processor):
    id = "hangs-on-chunk"

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    async def process_output_stream(self, args: Any) -> Any:
        self.seen += 1
        if self.seen == 2:
            await asyncio.Event().wait()
        return args.part


class SlowButFinite(Processor):
    id = "slow"

    async def process_output_stream(self, args: Any) -> Any:
        await asyncio.sleep(0.01)  # suspends: runs under the timer, and finishes in time
        return args.part


async def test_a_hung_input_hook_fails_the_run(memory: Memory, stalls: StallMonitor) -> None:
    agent = Agent(
        "a", model=MockModel([text_step("never")]), input_processors=[HangsOnInput()], memory=memory
    )
    start = time.perf_counter()
    with pytest.raises(ProcessorTimeoutError) as caught:
        await agent.generate("hi", processor_timeout=0.3, memory=THREAD)
    assert time.perf_counter() - start < 2
    assert caught.value.processor_id == "hangs-on-input" and caught.value.hook == "process_input"
    assert isinstance(caught.value, ProcessorError)
    assert stalls.max_stall < 0.1
    assert await memory.recall(THREAD["thread"], resource_id=THREAD["resource"]) == []


async def test_a_hung_stream_hook_fails_the_run(memory: Memory) -> None:
    agent = Agent(
        "a",
        model=MockModel([text_step("one two three")]),
        output_processors=[HangsOnSecondChunk()],
        processor_timeout=0.3,
        memory=memory,
    )
    output = await agent.stream("hi", memory=THREAD)
    start = time.perf_counter()
    chunks = [c async for c in output.full_stream]
    assert time.perf_counter() - start < 2
    assert chunks[-1].type == "error"
    error = chunks[-1].payload.error
    assert isinstance(error, ProcessorTimeoutError) and error.hook == "process_output_stream"
    assert await memory.recall(THREAD["thread"], resource_id=THREAD["resource"]) == []


async def test_a_processor_timeout_attribute_overrides_the_agent() -> None:
    hung = HangsOnInput()
    hung.timeout = 0.2  # type: ignore[attr-defined]
    agent = Agent("a", model=MockModel([text_step("never")]), input_processors=[hung], processor_timeout=None)
    with pytest.raises(ProcessorTimeoutError) as caught:
        await agent.generate("hi")
    assert caught.value.timeout == 0.2


async def test_hooks_that_suspend_but_finish_in_time_are_untouched() -> None:
    agent = Agent("a", model=MockModel([text_step("one two three")]), output_processors=[SlowButFinite()])
    result = await agent.generate("hi", processor_timeout=5)
    assert result.text == "one two three"


async def test_bad_timeouts_are_rejected() -> None:
    with pytest.raises(ConfigurationError):
        Agent("a", model=MockModel([]), processor_timeout=0)
    with pytest.raises(ConfigurationError):
        Agent("a", model=MockModel([]), max_retries=-1)
    agent = Agent("a", model=MockModel([text_step("x")]))
    with pytest.raises(ConfigurationError):
        await agent.generate("hi", processor_timeout="30")


@pytest.mark.parametrize("traced", [False, True], ids=["untraced", "traced"])
async def test_a_large_input_through_regex_filter_does_not_freeze_the_loop(
    stalls: StallMonitor, traced: bool
) -> None:
    # Traced hooks are wrapped in a span; the wrapper must offload a sync hook just the same.
    telemetry = configure(in_memory=True, set_global=False) if traced else None
    text = ("lorem ipsum dolor sit amet, " * 60_000) + " my email is ada@example.com"  # ~1.7 MB
    model = MockModel([text_step("ok")])
    agent = Agent(
        "a",
        model=model,
        input_processors=[RegexFilter(presets=["pii"], strategy="redact")],
        max_input_chars=2_000_000,
    )
    if traced:  # the tracing glue is imported on a process's first traced run: not what is measured
        await Agent("warm", model=MockModel([text_step("ok")])).generate("hi")
        await asyncio.sleep(0.05)  # the monitor ticks again, then forgets the warm-up
        stalls._max = 0.0
    assert (await agent.generate(text)).text == "ok"
    assert stalls.max_stall < 0.1  # on the loop this scan takes ~0.4 s; in a worker thread it ticks on
    sent = str(model.calls[0].prompt)
    assert "ada@example.com" not in sent and "lorem ipsum" in sent
    if telemetry is not None:
        assert any(span.name.startswith("processor regex-filter") for span in telemetry.spans())
        telemetry.shutdown()


async def test_a_slow_reader_is_not_mistaken_for_a_hung_hook() -> None:
    # The client pauses longer than the timeout between chunks: no hook is running meanwhile.
    agent = Agent(
        "a", model=MockModel([text_step("one two three four")]), output_processors=[SlowButFinite()]
    )
    output = await agent.stream("hi", processor_timeout=0.2)
    seen = []
    async for chunk in output.full_stream:
        seen.append(chunk.type)
        if chunk.type == "text-delta":
            await asyncio.sleep(0.3)
    assert "error" not in seen and seen[-1] == "finish"


async def test_a_processor_timeout_of_none_disables_the_bound_for_that_processor() -> None:
    class Patient(Processor):
        id = "patient"
        timeout = None

        async def process_input(self, args: Any) -> Any:
            await asyncio.sleep(0.3)

    agent = Agent(
        "a", model=MockModel([text_step("ok")]), input_processors=[Patient()], processor_timeout=0.1
    )
    assert (await agent.generate("hi")).text == "ok"
