"""`Agent(tools=[source])`: tools listed when something awaits them (an `MCPClient` in an app
module that cannot await), bounded in time, with failures naming the agent and the source."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sluicegate import Agent, Sluicegate
from sluicegate.errors import ConfigurationError
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import Tool, ToolSource, create_tool


def _echo(tool_id: str = "fx_echo") -> Tool:
    async def execute(input: Any, context: Any) -> Any:
        return {"echo": input["text"]}

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    return create_tool(id=tool_id, input_schema=schema, execute=execute)


class Source:
    """A tool source that lists `tools` (after `delay` seconds, or raises `error`)."""

    def __init__(self, tools: dict[str, Tool], *, delay: float = 0.0, error: Exception | None = None) -> None:
        self.tools, self.delay, self.error = tools, delay, error
        self.listings = 0
        self.closes = 0

    def __repr__(self) -> str:
        return "Source(fx)"

    async def list_tools(self) -> dict[str, Tool]:
        self.listings += 1
        await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return self.tools

    async def close(self) -> None:
        self.closes += 1


def test_a_source_is_a_tool_source_and_is_not_listed_at_construction() -> None:
    source = Source({"fx_echo": _echo()})
    assert isinstance(source, ToolSource)
    agent = Agent("a", model=MockModel(), tools=[source, _echo("local")])
    assert set(agent.tools) == {"local"}
    assert not agent.tool_sources.loaded
    assert source.listings == 0


async def test_the_first_run_lists_the_sources_once_and_calls_their_tools() -> None:
    source = Source({"fx_echo": _echo()})
    model = MockModel([tool_call_step(("c1", "fx_echo", {"text": "hi"})), text_step("done")])
    agent = Agent("a", model=model, tools=source)
    result = await agent.generate("echo hi")
    assert result.tool_results[0].payload.result == {"echo": "hi"}
    await agent.load_tools()
    assert source.listings == 1


async def test_a_source_that_hangs_is_a_bounded_error_naming_it_and_the_next_try_lists_again() -> None:
    source = Source({"fx_echo": _echo()}, delay=30)
    agent = Agent("slow", model=MockModel(), tools=[source])
    with pytest.raises(
        ConfigurationError, match=r"agent 'slow': listing the tools of Source\(fx\) took over 0.05 s"
    ):
        await agent.load_tools(within=0.05)
    assert "fx_echo" not in agent.tools
    source.delay = 0
    await agent.load_tools()
    assert "fx_echo" in agent.tools


async def test_a_source_that_fails_names_the_agent_the_source_and_why() -> None:
    source = Source({}, error=RuntimeError("MCP server 'fx' went away during listing tools"))
    agent = Agent("a", model=MockModel(), tools=[source])
    with pytest.raises(
        ConfigurationError, match=r"agent 'a': could not list the tools of Source\(fx\): MCP server 'fx'"
    ):
        await agent.load_tools()


async def test_a_listed_tool_may_not_shadow_one_the_agent_has() -> None:
    agent = Agent("a", model=MockModel(), tools=[Source({"fx_echo": _echo()}), _echo()])
    with pytest.raises(ConfigurationError, match="lists a tool 'fx_echo', a name the agent already has"):
        await agent.load_tools()


async def test_a_bad_timeout_is_refused() -> None:
    agent = Agent("a", model=MockModel(), tools=[Source({})])
    with pytest.raises(ConfigurationError, match="within must be a positive number"):
        await agent.load_tools(within=0)


async def test_the_app_lists_every_agent_and_closes_a_shared_source_once() -> None:
    source = Source({"fx_echo": _echo()})
    app = Sluicegate(
        agents=[Agent("a", model=MockModel(), tools=[source]), Agent("b", model=MockModel(), tools=[source])]
    )
    await app.load_tools()
    assert all("fx_echo" in agent.tools for agent in app.agents.values())
    await app.close_tool_sources()
    assert source.closes == 1


async def test_the_first_failure_cancels_the_listings_still_running() -> None:
    hanging = Source({"fx_echo": _echo()}, delay=30)
    broken = Source({}, error=RuntimeError("MCP server 'fx' could not start"))
    app = Sluicegate(
        agents=[Agent("a", model=MockModel(), tools=[hanging]), Agent("b", model=MockModel(), tools=[broken])]
    )
    before = set(asyncio.all_tasks())
    with pytest.raises(ConfigurationError, match="agent 'b': could not list"):
        await asyncio.wait_for(app.load_tools(), 5)
    await asyncio.sleep(0)
    assert set(asyncio.all_tasks()) - before == set()  # the hanging listing is not left running
    assert not app.agents["a"].tool_sources.loaded
