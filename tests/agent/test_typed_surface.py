"""The typed surface matches the runtime: every option `Agent` accepts is in the `TypedDict`,
`is_chunk` narrows by kind, and `Agent(...)` keeps working unparametrized."""

from __future__ import annotations

import re

import pytest

from sluicegate import Agent
from sluicegate.agent.options import KNOWN_CALL_OPTIONS, AgentCallOptions
from sluicegate.stream import Chunk, is_chunk
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import tool


async def test_every_runtime_option_is_typed() -> None:
    agent = Agent("a", model=MockModel([text_step("x")]))
    with pytest.raises(TypeError) as caught:
        await agent.generate("x", no_such_option=1)  # type: ignore[call-overload]
    match = re.search(r"its options are: (.*)$", str(caught.value))
    assert match is not None
    accepted = set(match.group(1).split(", "))
    assert accepted <= KNOWN_CALL_OPTIONS, accepted - KNOWN_CALL_OPTIONS
    assert "structured_output" not in AgentCallOptions.__annotations__  # typed per overload


async def test_is_chunk_checks_the_kind() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    model = MockModel([tool_call_step(("c1", "ping", {})), text_step("done")])
    output = await Agent("a", model=model, tools=[ping]).stream("x")
    seen: list[str] = []
    async for chunk in output.full_stream:
        if is_chunk(chunk, "tool-call"):
            seen.append(f"call {chunk.payload.tool_name}")
        elif is_chunk(chunk, "tool-result"):
            seen.append(f"result {chunk.payload.result}")
        elif is_chunk(chunk, "text-delta"):
            seen.append(f"text {chunk.payload.text}")
    assert seen == ["call ping", "result pong", "text done"]
    assert not is_chunk(Chunk("start"), "finish")


def test_unparametrized_and_parametrized_agents() -> None:
    plain = Agent("a", model=MockModel([text_step("hi")]))
    assert plain.generate_sync("x").object is None
    typed: Agent[dict[str, int]] = Agent(
        "b", model=MockModel([text_step('{"n": 1}')]), structured_output={"type": "object"}
    )
    assert typed.generate_sync("x").object == {"n": 1}
