"""Input guardrails that only check run concurrently with each other, and with
`run_in_parallel=True` alongside the first model call, whose output waits for them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sluicegate import Agent, create_tool
from sluicegate.processors import ModerationProcessor, PIIDetector, PromptInjectionDetector
from sluicegate.testing import MockModel, text_step, tool_call_step

from .conftest import CLEAN
from .test_windows import Judge

HATE = {"category_scores": [{"category": "hate", "score": 0.9}]}


def gated_judges(count: int, answer: dict[str, Any] | None = None) -> tuple[list[Judge], asyncio.Event]:
    gate = asyncio.Event()
    judges = [Judge(lambda _: answer or CLEAN) for _ in range(count)]
    for judge in judges:
        judge.gate = gate
    return judges, gate


async def wait_for(condition: Any) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition never became true")


async def test_checking_input_guards_run_concurrently() -> None:
    judges, gate = gated_judges(3)
    guards = [
        ModerationProcessor(model=judges[0]),
        PromptInjectionDetector(model=judges[1]),
        PIIDetector(model=judges[2], strategy="block"),
    ]
    main = MockModel([text_step("ok")])
    agent = Agent(name="g", model=main, input_processors=guards)
    run = asyncio.ensure_future(agent.generate("hello"))
    await wait_for(lambda: all(j.calls for j in judges))  # all three judging at once
    assert main.calls == []
    gate.set()
    result = await run
    assert result.text == "ok"


async def test_a_tripping_guard_cancels_the_others() -> None:
    slow = Judge(lambda _: CLEAN, delay=5)
    tripping = Judge(lambda _: HATE)
    agent = Agent(
        name="g",
        model=MockModel([text_step("ok")]),
        input_processors=[PromptInjectionDetector(model=slow), ModerationProcessor(model=tripping)],
    )
    result = await asyncio.wait_for(agent.generate("hello"), timeout=2)
    assert result.tripwire is not None and result.tripwire.processor_id == "moderation"
    assert slow.in_flight == 0  # cancelled, not left running


async def test_run_in_parallel_overlaps_the_first_model_call_and_holds_its_output() -> None:
    judges, gate = gated_judges(2)
    guards = [
        ModerationProcessor(model=judges[0], run_in_parallel=True),
        PromptInjectionDetector(model=judges[1], run_in_parallel=True),
    ]
    main = MockModel([text_step("answer")])
    agent = Agent(name="g", model=main, input_processors=guards)
    output = await agent.stream("hello")
    seen: list[Any] = []

    async def consume() -> None:
        async for chunk in output.full_stream:
            seen.append(chunk)

    task = asyncio.ensure_future(consume())
    await wait_for(lambda: main.calls and all(j.calls for j in judges))  # the model call started
    await asyncio.sleep(0.02)
    assert not any(c.type == "text-delta" for c in seen)  # but nothing was released
    gate.set()
    await task
    assert "".join(c.payload.text for c in seen if c.type == "text-delta") == "answer"


async def test_run_in_parallel_trip_discards_the_output_and_runs_no_tool() -> None:
    ran: list[Any] = []

    async def act(args: Any, context: Any) -> str:
        ran.append(args)
        return "done"

    tool = create_tool(id="act", description="Act", input_schema={"type": "object"}, execute=act)
    judge = Judge(lambda _: HATE, delay=0.05)
    main = MockModel([tool_call_step(("c1", "act", {})), text_step("after")])
    agent = Agent(
        name="g",
        model=main,
        tools=[tool],
        input_processors=[ModerationProcessor(model=judge, run_in_parallel=True)],
    )
    output = await agent.stream("hello")
    chunks = [c async for c in output.full_stream]
    assert ran == [] and len(main.calls) == 1
    assert chunks[-1].type == "tripwire"
    assert not any(c.type in ("tool-call", "tool-result", "text-delta") for c in chunks)


def test_run_in_parallel_needs_a_checking_strategy() -> None:
    with pytest.raises(ValueError, match="run_in_parallel"):
        PIIDetector(model=MockModel(), run_in_parallel=True)  # redact changes the input
    assert ModerationProcessor(model=MockModel(), run_in_parallel=True).run_in_parallel


async def test_run_in_parallel_trip_cancels_a_model_call_in_progress() -> None:
    from .test_windows import SlowStream

    model = SlowStream(["a "] * 100, pause=0.03)  # three seconds of streaming
    judge = Judge(lambda _: HATE, delay=0.05)
    agent = Agent(
        name="g", model=model, input_processors=[ModerationProcessor(model=judge, run_in_parallel=True)]
    )
    output = await agent.stream("hello")
    chunks = await asyncio.wait_for(_all(output), timeout=1.5)  # ends long before the model would
    assert chunks[-1].type == "tripwire"
    assert not any(c.type == "text-delta" for c in chunks)


async def _all(output: Any) -> list[Any]:
    return [c async for c in output.full_stream]
