"""The tool phase: the calls run concurrently, their data chunks reach the client while they
run, their results follow in call order, and a client that stops reading ends the calls."""

from __future__ import annotations

import asyncio
from typing import Any

from sluicegate import Agent, create_tool
from sluicegate.testing import MockModel, text_step, tool_call_step


def _gate_tool(seen: asyncio.Event, done: list[str]) -> Any:
    async def execute(input: dict[str, Any], context: Any) -> str:
        await context.writer.custom({"type": "data-progress", "data": {"n": input["n"]}})
        if input["n"] == 1:  # the first call ends only once its data chunk reached the client
            await asyncio.wait_for(seen.wait(), 2)
        done.append(str(input["n"]))
        return f"r{input['n']}"

    return create_tool(id="gate", description="", input_schema={"type": "object"}, execute=execute)


async def test_data_chunks_reach_the_client_while_the_calls_run_and_results_follow_in_order() -> None:
    seen, done = asyncio.Event(), []
    model = MockModel([tool_call_step(("c1", "gate", {"n": 1}), ("c2", "gate", {"n": 2})), text_step("ok")])
    output = await Agent("a", model=model, tools=[_gate_tool(seen, done)]).stream("x")
    kinds: list[str] = []
    results: list[Any] = []
    async for chunk in output.full_stream:
        kinds.append(chunk.type)
        if chunk.type == "data-progress" and chunk.data == {"n": 1}:
            assert "1" not in done  # the first call still runs: it waits for this chunk to be read
            seen.set()
        if chunk.type == "tool-result":
            results.append(chunk.payload.result)
    tool_phase = [k for k in kinds if k in ("data-progress", "tool-result")]
    assert tool_phase == ["data-progress", "data-progress", "tool-result", "tool-result"]
    assert results == ["r1", "r2"] and done == ["2", "1"]


async def test_a_client_that_stops_reading_ends_the_running_calls() -> None:
    cancelled = asyncio.Event()

    async def execute(input: dict[str, Any], context: Any) -> str:
        await context.writer.custom({"type": "data-progress", "data": {}})
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    slow = create_tool(id="slow", description="", input_schema={"type": "object"}, execute=execute)
    model = MockModel([tool_call_step(("c1", "slow", {})), text_step("ok")])
    output = await Agent("a", model=model, tools=[slow]).stream("x")
    stream = output.full_stream
    async for chunk in stream:
        if chunk.type == "data-progress":
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.wait_for(cancelled.wait(), 2)
