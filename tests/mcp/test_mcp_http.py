"""MCPClient over streamable HTTP and the older SSE transport, against the SDK's own server
(`MCPServer`, FastMCP before SDK 2) served by uvicorn on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from tests.mcp.helpers import ROOT

from sluicegate import Agent
from sluicegate.mcp import MCPClient, MCPConnectionError
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(mode: str) -> Iterator[int]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp.servers", mode, str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"the {mode} fixture server did not start") from None
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def http_port() -> Iterator[int]:
    yield from serve("http")


@pytest.fixture(scope="module")
def sse_port() -> Iterator[int]:
    yield from serve("sse")


async def echo_through_agent(mcp: MCPClient, server: str) -> object:
    tools = await mcp.list_tools()
    model = MockModel([tool_call_step(("c1", f"{server}_echo", {"text": "over http"})), text_step("ok")])
    result = await Agent(name="a", model=model, tools=tools).generate("go")
    return result.tool_results[0].payload.result


async def test_streamable_http(http_port: int) -> None:
    url = f"http://127.0.0.1:{http_port}/mcp"
    async with MCPClient(servers={"docs": {"url": url, "headers": {"X-Test": "1"}}}) as mcp:
        assert await echo_through_agent(mcp, "docs") == {"result": "over http"}
        assert (await mcp.list_prompts())["docs"][0]["name"] == "summarize"


async def test_sse_named_and_by_fallback(sse_port: int) -> None:
    named = {"url": f"http://127.0.0.1:{sse_port}/events", "transport": "sse"}
    async with MCPClient(servers={"old": named}) as mcp:
        assert mcp.servers["old"].kind == "sse"
        assert await echo_through_agent(mcp, "old") == {"result": "over http"}
    # A URL that says nothing: streamable HTTP is tried first, then SSE (Mastra's order).
    unsaid = {"url": f"http://127.0.0.1:{sse_port}/events"}
    async with MCPClient(servers={"old": unsaid}) as mcp:
        assert mcp.servers["old"].kind == "http"
        assert await echo_through_agent(mcp, "old") == {"result": "over http"}


async def test_nothing_listening_is_named() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    async with MCPClient(servers={"down": {"url": url, "connect_timeout": 3}}) as mcp:
        with pytest.raises(
            MCPConnectionError,
            match=r"MCP server 'down' could not be started or reached \(streamable-http: .*; sse: ",
        ):
            await mcp.list_tools()
