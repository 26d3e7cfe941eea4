"""MCP peers nobody here wrote, pinned in clients/mcp: `@modelcontextprotocol/server-everything`
as a server for `MCPClient` (stdio and streamable HTTP: tools, resources, prompts, elicitation),
and the MCP Inspector's CLI, `@mastra/mcp`'s `MCPClient` and the unmodified `@mastra/client-js`
as clients of the app's MCP routes.

Without node or the pinned packages (`bash clients/mcp/run.sh --install-only`) these skip,
unless SLUICEGATE_REQUIRE_SERVICES=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from tests.mcp.helpers import ROOT, children
from tests.mcp.sluicegate_server import server
from tests.server.live import free_port, serve_in_thread

from sluicegate import Agent, Sluicegate
from sluicegate.mcp import MCPClient
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing import MockModel, text_step, tool_call_step

PEERS = ROOT / "clients" / "mcp"
MODULES = PEERS / "node_modules"
EVERYTHING = MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
INSPECTOR = MODULES / ".bin" / "mcp-inspector"
REQUIRED = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"
TOKEN = "peer-s3cret"

pytestmark = pytest.mark.integration
module_loop = pytest.mark.asyncio(loop_scope="module")  # the async tests share the module's servers


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    for needed in (EVERYTHING, INSPECTOR, MODULES / "@mastra" / "mcp", MODULES / "@mastra" / "client-js"):
        if not needed.exists():
            return f"{needed.relative_to(ROOT)} is missing (bash clients/mcp/run.sh --install-only)"
    return None


@pytest.fixture(scope="module", autouse=True)
def _peers_installed() -> None:
    missing = _missing()
    if missing is not None:
        if REQUIRED:
            pytest.fail(f"{missing} (SLUICEGATE_REQUIRE_SERVICES=1)")
        pytest.skip(missing)


# ------------------------------------------------------------------ server-everything as a server


@pytest.fixture(scope="module")
def everything_http() -> Iterator[str]:
    """server-everything over streamable HTTP on a free port."""
    port = free_port()
    process = subprocess.Popen(
        ["node", str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise AssertionError("server-everything exited before listening") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["stdio", "http"])
async def everything(request: pytest.FixtureRequest) -> AsyncIterator[MCPClient]:
    if request.param == "stdio":
        definition: dict[str, Any] = {"command": "node", "args": [str(EVERYTHING), "stdio"]}
    else:
        definition = {"url": request.getfixturevalue("everything_http")}
    async with MCPClient(servers={"ev": definition}, timeout=30) as client:
        yield client


@module_loop
async def test_server_everythings_tools_are_sluicegate_tools(everything: MCPClient) -> None:
    tools = await everything.list_tools()
    assert {"ev_echo", "ev_get-sum", "ev_trigger-elicitation-request"} <= set(tools)
    model = MockModel([tool_call_step(("c1", "ev_get-sum", {"a": 2, "b": 40})), text_step("42")])
    result = await Agent(name="sums", model=model, tools=tools).generate("2 + 40?")
    assert "42" in json.dumps(result.tool_results[0].payload.result)


@module_loop
async def test_server_everythings_resources_and_prompts(everything: MCPClient) -> None:
    resources = (await everything.list_resources())["ev"]
    assert resources and all("uri" in r for r in resources)
    read = await everything.read_resource("ev", resources[0]["uri"])
    assert read["contents"] and read["contents"][0]["uri"] == resources[0]["uri"]
    prompts = {p["name"] for p in (await everything.list_prompts())["ev"]}
    assert "simple-prompt" in prompts
    prompt = await everything.get_prompt("ev", "simple-prompt")
    assert prompt["messages"][0]["role"] == "user"


@module_loop
async def test_server_everythings_elicitation_suspends_and_resumes(everything: MCPClient) -> None:
    model = MockModel([tool_call_step(("c1", "ev_trigger-elicitation-request", {})), text_step("thanks")])
    agent = Agent(name="forms", model=model, tools=await everything.list_tools())
    output = await agent.stream("fill the form")
    suspended = [c async for c in output.full_stream if c.type == "tool-call-suspended"]
    question = suspended[0].payload.suspend_payload
    assert question["message"] == "Please provide inputs for the following fields:"
    assert question["requestedSchema"]["properties"]["integer"]["maximum"] == 100
    answer = {"action": "accept", "content": {"name": "Ada", "check": True, "integer": 5}}
    resumed = await agent.resume_stream(answer, run_id=output.run_id)
    results = [c async for c in resumed.full_stream if c.type == "tool-result"]
    assert "Name: Ada" in json.dumps(results[0].payload.result)


@module_loop
async def test_nothing_of_server_everything_is_left_behind() -> None:
    before = children()
    async with MCPClient(servers={"ev": {"command": "node", "args": [str(EVERYTHING), "stdio"]}}) as client:
        await client.list_tools()
        assert children() - before
    assert children() - before == set()


# ------------------------------------------------------------------ clients of `sluicegate serve`


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    app = create_app(Sluicegate(mcp_servers={"main": server}), ServerSettings(api_token=TOKEN))
    with serve_in_thread(app, lifespan="on") as url:
        yield url


def node(*args: str, timeout: float = 120) -> Any:
    done = subprocess.run(args, cwd=PEERS, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args[:3]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return json.loads(done.stdout)


def inspector(base: str, transport: str, *method: str) -> Any:
    path = "mcp" if transport == "http" else "sse"
    url = f"{base}/api/mcp/main/{path}"
    return node(
        str(INSPECTOR),
        "--cli",
        url,
        "--transport",
        transport,
        "--header",
        f"Authorization: Bearer {TOKEN}",
        *method,
    )


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_the_mcp_inspector_cli_lists_and_calls_tools(base: str, transport: str) -> None:
    listed = inspector(base, transport, "--method", "tools/list")
    assert {t["name"] for t in listed["tools"]} == {"add", "wipe", "ask_support"}
    called = inspector(
        base, transport, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "b=3"
    )
    assert called["structuredContent"] == {"sum": 5} and called["isError"] is False


def test_the_mcp_inspector_cli_is_refused_without_the_token(base: str) -> None:
    done = subprocess.run(
        [
            str(INSPECTOR),
            "--cli",
            f"{base}/api/mcp/main/mcp",
            "--transport",
            "http",
            "--method",
            "tools/list",
        ],
        cwd=PEERS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "tools" not in done.stdout and "auth" in (done.stdout + done.stderr).lower()


def test_mastras_mcp_client_lists_and_runs_the_apps_tools(base: str) -> None:
    answer = node("node", "peers.mjs", "mastra-mcp", base, "main", TOKEN)
    assert answer["tools"] == ["sg_add", "sg_ask_support", "sg_wipe"]
    assert answer["result"] == {"sum": 5}


def test_mastras_client_js_lists_the_servers_and_their_tools(base: str) -> None:
    answer = node("node", "peers.mjs", "client-js", base, "main", TOKEN)
    (listed,) = answer["servers"]["servers"]
    assert listed["id"] == "main" and listed["version_detail"]["version"] == "1.0.0"
    tools = {t["id"]: t for t in answer["tools"]["tools"]}
    assert set(tools) == {"add", "wipe", "ask_support"} and tools["ask_support"]["toolType"] == "agent"
