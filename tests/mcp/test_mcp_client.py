"""MCPClient against real servers over stdio: tools in agent runs, approval from annotations,
resources and prompts, and closing that leaves nothing behind."""

from __future__ import annotations

from typing import Any

import pytest
from tests.mcp.helpers import children, fixture_server, time_server

from sluicegate import Agent
from sluicegate.mcp import MCPClient, MCPConfigError
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import ToolContext

pytestmark = pytest.mark.integration


async def run(agent: Agent, **options: Any) -> list[Any]:
    output = await agent.stream("go", **options)
    return [chunk async for chunk in output.full_stream]


async def test_time_server_tools_run_in_an_agent() -> None:
    """`mcp-server-time` from PyPI: namespaced tools, its schema validating the model's input."""
    async with MCPClient(servers={"time": time_server()}) as mcp:
        tools = await mcp.list_tools()
        assert {"time_get_current_time", "time_convert_time"} <= set(tools)
        current = tools["time_get_current_time"]
        assert current.json_schema()["required"] == ["timezone"]
        assert current.annotations is not None and current.annotations["readOnlyHint"] is True
        model = MockModel(
            [
                tool_call_step(
                    ("c1", "time_get_current_time", {"timezone": "Europe/Paris"}),
                    ("c2", "time_get_current_time", {"timezone": 5}),
                ),
                text_step("done"),
            ]
        )
        chunks = await run(Agent(name="clock", model=model, tools=tools))
    results = {c.payload.tool_call_id: c for c in chunks if c.type in ("tool-result", "tool-error")}
    assert results["c1"].type == "tool-result"
    assert results["c1"].payload.result["timezone"] == "Europe/Paris"
    # Invalid input is refused before anything is sent, as for any sluicegate tool.
    assert results["c2"].type == "tool-error"
    assert "invalid input for tool 'time_get_current_time'" in str(results["c2"].payload.error)


async def test_toolsets_per_server_and_per_call() -> None:
    async with MCPClient(servers={"fx": fixture_server(), "time": time_server()}) as mcp:
        toolsets = await mcp.list_toolsets()
        assert set(toolsets) == {"fx", "time"}
        assert "fx_echo" in toolsets["fx"] and all(name.startswith("time_") for name in toolsets["time"])
        model = MockModel([tool_call_step(("c1", "fx_echo", {"text": "hello"})), text_step("ok")])
        chunks = await run(Agent(name="a", model=model), tools=toolsets["fx"])
    result = next(c for c in chunks if c.type == "tool-result")
    assert result.payload.result == {"result": "hello"}


async def test_is_error_results_and_unknown_tools_are_tool_errors() -> None:
    async with MCPClient(servers={"fx": fixture_server()}) as mcp:
        tools = await mcp.list_tools()
        model = MockModel([tool_call_step(("c1", "fx_fail", {"reason": "disk full"})), text_step("ok")])
        chunks = await run(Agent(name="a", model=model, tools=tools))
    error = next(c for c in chunks if c.type == "tool-error")
    assert "MCP tool fx_fail failed" in str(error.payload.error)
    assert chunks[-1].type == "finish"  # the model read the error and the run went on


async def test_approval_unless_read_only_and_the_card_shows_annotations() -> None:
    async with MCPClient(servers={"fx": fixture_server()}, require_approval="unless-read-only") as mcp:
        tools = await mcp.list_tools()
        assert tools["fx_echo"].require_approval is False  # readOnlyHint: true
        assert tools["fx_delete_note"].require_approval is True  # readOnlyHint: false
        assert tools["fx_lookup_customer"].require_approval is True  # no annotations: waits
        model = MockModel(
            [
                tool_call_step(("c1", "fx_echo", {"text": "hi"}), ("c2", "fx_delete_note", {"note_id": 7})),
                text_step("done"),
            ]
        )
        agent = Agent(name="notes", model=model, tools=tools)
        chunks = await run(agent)
        asked = next(c for c in chunks if c.type == "tool-call-approval")
        assert asked.payload.tool_name == "fx_delete_note"
        assert asked.payload.annotations == {
            "title": "Delete note",
            "readOnlyHint": False,
            "destructiveHint": True,
        }
        assert asked.to_dict()["payload"]["annotations"]["destructiveHint"] is True
        resumed = await agent.approve_tool_call(run_id=chunks[0].run_id, tool_call_id="c2")
        after = [c async for c in resumed.full_stream]
    results = {c.payload.tool_call_id: c.payload.result for c in chunks + after if c.type == "tool-result"}
    assert results == {"c1": {"result": "hi"}, "c2": {"result": "deleted 7"}}


async def test_per_server_policy_overrides_the_client() -> None:
    servers = {"fx": fixture_server(require_approval=True), "time": time_server()}
    async with MCPClient(servers=servers, require_approval=False) as mcp:
        toolsets = await mcp.list_toolsets()
    assert all(tool.require_approval for tool in toolsets["fx"].values())
    assert not any(tool.require_approval for tool in toolsets["time"].values())


async def test_resources_and_prompts() -> None:
    async with MCPClient(servers={"fx": fixture_server(), "time": time_server()}) as mcp:
        resources = await mcp.list_resources()
        assert resources["fx"] == [
            {"name": "readme", "uri": "notes://readme", "description": "", "mimeType": "text/plain"}
        ]
        assert resources["time"] == []  # offers none
        read = await mcp.read_resource("fx", "notes://readme")
        assert read["contents"][0]["text"] == "Read me first."
        prompts = await mcp.list_prompts()
        assert prompts["fx"][0]["name"] == "summarize"
        assert prompts["fx"][0]["arguments"] == [{"name": "topic", "required": True}]
        got = await mcp.get_prompt("fx", "summarize", {"topic": "sluices"})
        assert got["messages"][0]["content"]["text"] == "Summarize sluices in one line."
        with pytest.raises(MCPConfigError, match="no MCP server named 'nope'"):
            await mcp.read_resource("nope", "notes://readme")
        with pytest.raises(MCPConfigError, match="arguments must be a dict of strings"):
            await mcp.get_prompt("fx", "summarize", {"topic": 3})  # type: ignore[dict-item]


async def test_servers_start_lazily_and_close_stops_them() -> None:
    before = children()
    mcp = MCPClient(servers={"fx": fixture_server(), "time": time_server()})
    assert children() == before  # nothing starts until it is used
    async with mcp:
        tools = await mcp.list_tools()
        assert len(children() - before) == 2
    assert children() == before
    # A closed client's tools are tool errors, never a server started behind its back.
    with pytest.raises(Exception, match="MCP client serving 'fx' is closed"):
        await tools["fx_echo"].execute({"text": "x"}, ToolContext(tool_call_id="c"))
    with pytest.raises(MCPConfigError, match="closed"):
        await mcp.list_tools()
    assert children() == before
    async with mcp:  # opened again, on demand
        assert (await tools["fx_echo"].execute({"text": "back"}, ToolContext(tool_call_id="c"))) == {
            "result": "back"
        }
    assert children() == before
