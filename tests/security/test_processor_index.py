"""Per-request values are never written onto shared processor objects."""

from __future__ import annotations

import asyncio
from typing import Any

from sluicegate import Agent
from sluicegate.processors import Processor
from sluicegate.testing import MockModel, text_step


class Probe(Processor):
    """Records the index each request saw, after yielding so that requests interleave."""

    id = "probe"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, int | None]] = []

    async def process_input(self, args: Any) -> None:
        await asyncio.sleep(0.001)
        self.seen.append((args.request_context.get("who"), args.processor_index))


class Other(Processor):
    id = "other"

    def process_input(self, args: Any) -> None:
        return None


async def test_processor_index_is_per_request_and_never_stored_on_the_processor() -> None:
    from sluicegate import RequestContext

    probe = Probe()
    first = Agent(name="first", model=MockModel([text_step("ok")] * 20), input_processors=[probe])
    second = Agent(name="second", model=MockModel([text_step("ok")] * 20), input_processors=[Other(), probe])
    await asyncio.gather(
        *(
            agent.generate("hi", request_context=RequestContext({"who": agent.name}))
            for _ in range(20)
            for agent in (first, second)
        )
    )
    assert {who: {i for w, i in probe.seen if w == who} for who, _ in probe.seen} == {
        "first": {0},
        "second": {1},
    }
    assert probe.processor_index is None
    assert "processor_index" not in vars(probe)


async def test_output_hooks_get_their_position_in_the_output_array() -> None:
    seen: dict[str, int | None] = {}

    class Both(Processor):
        id = "both"

        def process_input(self, args: Any) -> None:
            seen["input"] = args.processor_index

        def process_output_result(self, args: Any) -> None:
            seen["output"] = args.processor_index

    both = Both()
    agent = Agent(
        name="a",
        model=MockModel([text_step("ok")]),
        input_processors=[both],
        output_processors=[Other(), Other(), both],
    )
    await agent.generate("hi")
    assert seen == {"input": 0, "output": 2}
