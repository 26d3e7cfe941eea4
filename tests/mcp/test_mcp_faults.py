"""Servers that hang, die mid-call, write garbage, answer 10 MB or never start: each is a tool
error (or a `MCPConnectionError` naming the server) within its timeout, and closing leaves no
process or file descriptor behind."""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest
from tests.mcp.helpers import ROOT, children, fixture_server, open_fds

from sluicegate import Agent
from sluicegate.mcp import MCPClient, MCPConnectionError
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration

TIMEOUT = 3.0


async def run_chunks(mcp: MCPClient, tool: str, args: dict[str, Any]) -> tuple[list[Any], float]:
    tools = await mcp.list_tools()
    model = MockModel([tool_call_step(("c1", tool, args)), text_step("ok")])
    started = time.monotonic()
    output = await Agent(name="a", model=model, tools=tools).stream("go")
    chunks = [c async for c in output.full_stream]
    return chunks, time.monotonic() - started


def outcome(chunks: list[Any]) -> Any:
    return next(c for c in chunks if c.type in ("tool-result", "tool-error"))


async def test_a_hanging_tool_is_a_tool_error_within_the_timeout() -> None:
    before, fds = children(), open_fds()
    async with MCPClient(servers={"fx": fixture_server(timeout=TIMEOUT)}) as mcp:
        await mcp.list_tools()  # started (its start-up is not the call's time)
        chunks, elapsed = await run_chunks(mcp, "fx_hang", {})
        error = outcome(chunks)
        assert error.type == "tool-error" and "got no answer within 3 s" in str(error.payload.error)
        assert TIMEOUT <= elapsed < TIMEOUT + 2
        assert chunks[-1].type == "finish"
        # The server itself still answers other calls.
        chunks, _ = await run_chunks(mcp, "fx_echo", {"text": "still here"})
        assert outcome(chunks).payload.result == {"result": "still here"}
    assert children() == before and open_fds() <= fds


async def test_a_server_killed_mid_call_is_a_tool_error_and_the_next_call_restarts_it() -> None:
    before, fds = children(), open_fds()
    async with MCPClient(servers={"fx": fixture_server(timeout=30)}) as mcp:
        await mcp.list_tools()
        chunks, elapsed = await run_chunks(mcp, "fx_die", {})
        error = outcome(chunks)
        assert error.type == "tool-error" and "closed the connection" in str(error.payload.error)
        assert elapsed < 10  # seen when the pipe closed, not at the 30 s timeout
        chunks, _ = await run_chunks(mcp, "fx_echo", {"text": "again"})
        assert outcome(chunks).payload.result == {"result": "again"}
    assert children() == before and open_fds() <= fds


async def test_garbage_answers_are_tool_errors_within_the_timeout() -> None:
    """A hand-written server: a line that is not JSON-RPC (the call never gets its answer), then
    JSON-RPC whose result is not a tool result (refused by the SDK at once)."""
    before = children()
    raw = {"command": sys.executable, "args": ["-m", "tests.mcp.raw_server"], "cwd": str(ROOT)}
    async with MCPClient(servers={"raw": {**raw, "timeout": TIMEOUT}}) as mcp:
        assert set(await mcp.list_tools()) == {"raw_garble", "raw_misshape"}
        chunks, elapsed = await run_chunks(mcp, "raw_garble", {})
        assert outcome(chunks).type == "tool-error" and elapsed < TIMEOUT + 2
        assert chunks[-1].type == "finish"
        chunks, elapsed = await run_chunks(mcp, "raw_misshape", {})
        error = outcome(chunks)
        assert error.type == "tool-error" and elapsed < TIMEOUT
        assert "MCP server 'raw' answered the call of tool 'misshape' with something that is not MCP" in str(
            error.payload.error
        )
        assert "content: Input should be a valid list" in str(error.payload.error)
    assert children() == before


async def test_a_10_mb_answer_arrives_whole_and_nothing_is_left_behind() -> None:
    before, fds = children(), open_fds()
    async with MCPClient(servers={"fx": fixture_server(timeout=60)}) as mcp:
        await mcp.list_tools()
        chunks, _ = await run_chunks(mcp, "fx_big", {"megabytes": 10})
        result = outcome(chunks)
        assert result.type == "tool-result"
        assert len(result.payload.result["result"]) == 10 * 1024 * 1024
    assert children() == before and open_fds() <= fds


async def test_a_server_that_never_starts_is_named() -> None:
    before = children()
    mcp = MCPClient(servers={"ghost": {"command": "/nonexistent/mcp-server"}})
    with pytest.raises(MCPConnectionError, match="MCP server 'ghost' could not be started"):
        await mcp.list_tools()
    await mcp.close()
    # A process that never answers the handshake is stopped at the connect timeout.
    mute = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"], "connect_timeout": 2}
    started = time.monotonic()
    async with MCPClient(servers={"mute": mute}) as client:
        with pytest.raises(MCPConnectionError, match=r"'mute' could not be started .*no answer within 2 s"):
            await client.list_tools()
    assert time.monotonic() - started < 10
    assert children() == before
