"""A run works on its own copy of the caller's RequestContext and never writes into it."""

from __future__ import annotations

import asyncio
from typing import Any

from sluicegate import Agent, RequestContext
from sluicegate.memory import Memory
from sluicegate.processors import Processor
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.testing import MockModel, text_step


class Writes(Processor):
    """A processor that writes into the context it is given and reads it back later."""

    id = "writes"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[Any, Any]] = []

    async def process_input(self, args: Any) -> None:
        args.request_context.set("scratch", args.request_context.get(THREAD_ID_KEY))
        await asyncio.sleep(0.001)
        self.seen.append((args.request_context.get(THREAD_ID_KEY), args.request_context.get("scratch")))


async def test_the_callers_context_is_read_never_written() -> None:
    shared = RequestContext({"tenant": "acme"})
    writes = Writes()
    agent = Agent(
        name="a", model=MockModel([text_step("ok")] * 10), memory=Memory(), input_processors=[writes]
    )
    await asyncio.gather(
        *(
            agent.generate("hi", memory={"thread": f"t{i}", "resource": f"u{i}"}, request_context=shared)
            for i in range(10)
        )
    )
    assert shared.to_dict() == {"tenant": "acme"}
    assert sorted(writes.seen) == sorted((f"t{i}", f"t{i}") for i in range(10))


async def test_processors_still_read_the_callers_values() -> None:
    seen: list[Any] = []

    class Reads(Processor):
        id = "reads"

        def process_input(self, args: Any) -> None:
            seen.append((args.request_context.get("tenant"), args.request_context.get(RESOURCE_ID_KEY)))

    context = RequestContext({"tenant": "acme", RESOURCE_ID_KEY: "u1"})
    await Agent(name="a", model=MockModel([text_step("ok")]), input_processors=[Reads()]).generate(
        "hi", request_context=context
    )
    assert seen == [("acme", "u1")]
    assert context.to_dict() == {"tenant": "acme", RESOURCE_ID_KEY: "u1"}
