"""sluicegate's MCPServer: its tools and agents through the official `mcp` client in-process,
and through sluicegate's own MCPClient over stdio."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from mcp import Client
from tests.mcp.helpers import ROOT, children
from tests.mcp.sluicegate_server import adder, server
from tests.server.live import serve_in_thread

from sluicegate import Agent
from sluicegate.mcp import MCPClient, MCPConfigError, MCPServer
from sluicegate.testing import MockModel, text_step
from sluicegate.tools import ToolContext


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def test_the_official_client_lists_and_calls_tools_and_agents() -> None:
    async with Client(server.sdk_server) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(listed) == {"add", "wipe", "ask_support"}
        assert listed["add"].input_schema["required"] == ["a", "b"]
        assert listed["add"].annotations is not None and listed["add"].annotations.read_only_hint is True
        assert listed["ask_support"].input_schema["required"] == ["message"]

        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert not added.is_error and added.structured_content == {"sum": 5}

        # The agent runs with its processors: the caller gets the guarded answer.
        answer = await client.call_tool("ask_support", {"message": "How do I get a refund?"})
        assert not answer.is_error and "jane.roe@example.com" not in text(answer)
        assert "Write to" in text(answer)


async def test_bad_calls_are_error_results_not_crashes() -> None:
    async with Client(server.sdk_server) as client:
        invalid = await client.call_tool("add", {"a": "two", "b": 3})
        assert invalid.is_error and "invalid input for tool 'add'" in text(invalid)
        unknown = await client.call_tool("nope", {})
        assert unknown.is_error and "unknown tool 'nope'" in text(unknown)
        # Approval cannot be given over MCP, so the tool is refused, never run unapproved.
        refused = await client.call_tool("wipe", {})
        assert refused.is_error and "needs a person's approval" in text(refused)
        extra = await client.call_tool("ask_support", {"message": "hi", "resourceId": "someone-else"})
        assert extra.is_error and 'takes {"message"' in text(extra)


async def test_sluicegate_client_to_sluicegate_server_over_stdio() -> None:
    before = children()
    definition = {"command": sys.executable, "args": ["-m", "tests.mcp.sluicegate_server"], "cwd": str(ROOT)}
    async with MCPClient(servers={"main": definition}, require_approval="unless-read-only") as mcp:
        tools = await mcp.list_tools()
        assert set(tools) == {"main_add", "main_wipe", "main_ask_support"}
        assert tools["main_add"].require_approval is False  # served with readOnlyHint: true
        assert await tools["main_add"].execute({"a": 1, "b": 2}, ToolContext(tool_call_id="c")) == {"sum": 3}
    assert children() == before


def test_configuration_is_checked() -> None:
    with pytest.raises(MCPConfigError, match="version must be"):
        MCPServer(name="main", version="")
    with pytest.raises(MCPConfigError, match="tool name 'has space'"):
        MCPServer(name="main", version="1", tools={"has space": adder})
    with pytest.raises(MCPConfigError, match="ask_x is both a tool and an agent's tool"):
        agent = Agent(name="x", model=MockModel([text_step("hi")]))
        MCPServer(name="main", version="1", tools={"ask_x": adder}, agents={"x": agent})
    bad = Agent(name="x", model=MockModel([text_step("hi")]))
    with pytest.raises(MCPConfigError, match="agent name 'a b'"):
        MCPServer(name="main", version="1", agents={"a b": bad})


async def test_streamable_http_with_sluicegates_client() -> None:
    with serve_in_thread(server.streamable_http_app(), lifespan="on") as base:
        async with MCPClient(servers={"main": {"url": f"{base}/mcp"}}) as mcp:
            tools = await mcp.list_tools()
            context = ToolContext(tool_call_id="c")
            assert await tools["main_add"].execute({"a": 20, "b": 22}, context) == {"sum": 42}
            answer = await tools["main_ask_support"].execute({"message": "refund?"}, context)
    assert "jane.roe@example.com" not in str(answer) and "Write to" in str(answer)
