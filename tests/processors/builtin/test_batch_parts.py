from __future__ import annotations

import asyncio
from typing import Any

from sluicegate import Agent
from sluicegate.processors import BatchPartsProcessor
from sluicegate.testing import MockModel, text_step, tool_call_step


def deltas(chunks: list[Any]) -> list[str]:
    return [c.payload.text for c in chunks if c.type == "text-delta"]


async def run(processor: BatchPartsProcessor, steps: list[Any], collect: Any) -> list[Any]:
    agent = Agent(name="b", model=MockModel(steps), tools=[], output_processors=[processor])
    return list(await collect(await agent.stream("go")))


async def test_batch_size_combines_and_stream_end_flushes(collect: Any) -> None:
    chunks = await run(BatchPartsProcessor(batch_size=3), [text_step("abcdefg", pieces=7)], collect)
    assert deltas(chunks) == ["abc", "def", "g"]
    types = [c.type for c in chunks]
    assert types.index("text-end") > max(i for i, t in enumerate(types) if t == "text-delta")
    assert types[-2:] == ["step-finish", "finish"]


async def test_batch_size_option_is_used(collect: Any) -> None:
    chunks = await run(BatchPartsProcessor(batch_size=2), [text_step("abcdef", pieces=6)], collect)
    assert deltas(chunks) == ["ab", "cd", "ef"]


async def test_emit_on_non_text_false_batches_everything_in_order(collect: Any) -> None:
    on = await run(BatchPartsProcessor(batch_size=50), [text_step("abcd", pieces=4)], collect)
    off = await run(
        BatchPartsProcessor(batch_size=50, emit_on_non_text=False), [text_step("abcd", pieces=4)], collect
    )
    assert deltas(on) == deltas(off) == ["abcd"]
    assert [c.type for c in on] == [c.type for c in off]
    # With emit_on_non_text=False, lifecycle parts count toward the batch, so batches shift.
    batched = await run(
        BatchPartsProcessor(batch_size=3, emit_on_non_text=False), [text_step("abcdef", pieces=6)], collect
    )
    eager = await run(BatchPartsProcessor(batch_size=3), [text_step("abcdef", pieces=6)], collect)
    assert deltas(eager) == ["abc", "def"]
    assert deltas(batched) != deltas(eager) and "".join(deltas(batched)) == "abcdef"
    assert [c.type for c in batched if c.type != "text-delta"] == [
        c.type for c in eager if c.type != "text-delta"
    ]


async def test_max_wait_time_flushes_while_the_model_stalls(collect: Any) -> None:
    step = text_step("ab", pieces=2)

    async def slow_parts() -> Any:
        for index, part in enumerate(step):
            if index == 3:
                await asyncio.sleep(0.3)
            yield part

    class Slow(MockModel):
        async def do_stream(self, options: Any) -> Any:
            self.calls.append(options)
            from sluicegate.models.base import StreamResult

            return StreamResult(stream=slow_parts())

    seen: list[tuple[float, Any]] = []
    agent = Agent(
        name="b", model=Slow([step]), output_processors=[BatchPartsProcessor(batch_size=10, max_wait_time=50)]
    )
    loop = asyncio.get_running_loop()
    start = loop.time()
    async for chunk in (await agent.stream("go")).full_stream:
        seen.append((loop.time() - start, chunk))
    first = next((t, c) for t, c in seen if c.type == "text-delta")
    assert first[1].payload.text == "a" and first[0] < 0.25
    assert "".join(c.payload.text for _, c in seen if c.type == "text-delta") == "ab"

    waiting: list[tuple[float, Any]] = []
    agent = Agent(name="b", model=Slow([step]), output_processors=[BatchPartsProcessor(batch_size=10)])
    start = loop.time()
    async for chunk in (await agent.stream("go")).full_stream:
        waiting.append((loop.time() - start, chunk))
    assert next(t for t, c in waiting if c.type == "text-delta") >= 0.25


async def test_tool_steps_keep_every_part(collect: Any) -> None:
    steps = [tool_call_step(("c1", "missing", {}), text="thinking"), text_step("final answer", pieces=4)]
    chunks = await run(BatchPartsProcessor(batch_size=3), steps, collect)
    assert "".join(deltas(chunks)) == "thinkingfinal answer"
    assert [c.type for c in chunks].count("step-finish") == 2
