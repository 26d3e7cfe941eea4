"""A `ResponseCache` hit replays a tool-call step *with its tools' results*: the tools are not
run again (the documents: "cache hits replay tool calls without re-executing them")."""

from __future__ import annotations

from typing import Any

from sluicegate import Agent, create_tool
from sluicegate.cache import InMemoryServerCache
from sluicegate.processors import ResponseCache
from sluicegate.testing import MockModel, text_step, tool_call_step


def charging_tool(charges: list[int], *, fail: bool = False) -> Any:
    async def execute(input: Any, context: Any) -> dict[str, Any]:
        charges.append(input["amount"])
        if fail:
            raise RuntimeError("card declined")
        return {"charged": input["amount"], "receipt": f"r-{len(charges)}"}

    return create_tool(
        id="charge",
        description="Charge the customer's card.",
        input_schema={
            "type": "object",
            "properties": {"amount": {"type": "integer"}},
            "required": ["amount"],
        },
        execute=execute,
    )


def steps() -> list[Any]:
    return [tool_call_step(("call-1", "charge", {"amount": 30})), text_step("Charged 30.")]


async def test_a_hit_replays_the_result_and_does_not_charge_twice() -> None:
    charges: list[int] = []
    cache = ResponseCache(cache=InMemoryServerCache())
    agent = Agent("shop", model=MockModel(steps()), tools=[charging_tool(charges)], input_processors=[cache])
    first = await agent.generate("Charge 30")
    output = await agent.stream("Charge 30")
    chunks = [c async for c in output.full_stream]
    assert charges == [30]
    results = [c for c in chunks if c.type == "tool-result"]
    assert [r.payload.result for r in results] == [{"charged": 30, "receipt": "r-1"}]
    assert await output.text == first.text == "Charged 30."
    replayed = (await output.tool_results)[0]
    assert replayed.payload.tool_call_id == "call-1"
    messages = (await output.response).messages
    invocation = next(
        p["toolInvocation"] for m in messages for p in m.content.parts if p["type"] == "tool-invocation"
    )
    assert invocation["state"] == "result" and invocation["result"] == {"charged": 30, "receipt": "r-1"}


async def test_a_step_whose_tool_failed_is_not_cached() -> None:
    charges: list[int] = []
    cache = ResponseCache(cache=InMemoryServerCache())
    model = MockModel([*steps(), *steps()])
    agent = Agent("shop", model=model, tools=[charging_tool(charges, fail=True)], input_processors=[cache])
    await agent.generate("Charge 30")
    await agent.generate("Charge 30")
    assert charges == [30, 30]  # nothing replayed a failure as if the tool had answered
