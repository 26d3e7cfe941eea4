"""The app's MCP servers: registered on `Sluicegate(mcp_servers=...)`, served at Mastra's
`/api/mcp/...` routes, and reached by the official `mcp` client over streamable HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from tests.mcp.helpers import ROOT, alive, children
from tests.mcp.sluicegate_server import adder, server, support, wipe
from tests.server.live import serve_in_thread

from sluicegate import Sluicegate
from sluicegate.cli import main as cli_main
from sluicegate.errors import ConfigurationError
from sluicegate.mcp import MCPClient, MCPServer
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.server import Identity, ServerSettings, create_app
from sluicegate.tools import ToolContext, create_tool


def test_servers_are_registered_by_id() -> None:
    registry = Sluicegate(mcp_servers={"main": server})
    assert registry.mcp_servers == {"main": server}
    assert registry.get_mcp_server("main") is server
    assert registry.get_mcp_server("other") is None
    assert Sluicegate().mcp_servers == {}


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"has space": server}, "mcp_servers key 'has space' is not a server id"),
        ({"../x": server}, "mcp_servers key '../x' is not a server id"),
        ({"": server}, "mcp_servers key '' is not a server id"),
        ({"main": object()}, r"mcp_servers\['main'\] is a object, not a sluicegate.mcp.MCPServer"),
        ([server], "mcp_servers must map ids to MCPServer objects"),
    ],
)
def test_bad_registrations_name_the_entry(servers: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Sluicegate(mcp_servers=servers)


# ------------------------------------------------------------------ the routes


def whoami_tool() -> Any:
    async def whoami(input: Any, context: ToolContext) -> Any:
        return {"resource": context.request_context.get(RESOURCE_ID_KEY)}

    return create_tool(id="whoami", input_schema={"type": "object"}, execute=whoami)


def make_app(settings: ServerSettings | None = None, **registry: Any) -> Any:
    served = MCPServer(
        name="main",
        version="1.0.0",
        description="The support desk",
        tools={"add": adder, "wipe": wipe, "whoami": whoami_tool()},
        agents={"support": support},
    )
    return create_app(Sluicegate(mcp_servers={"main": served}, **registry), settings or ServerSettings())


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(make_app()) as test_client:
        yield test_client


def test_servers_in_mastras_registry_shape(client: TestClient) -> None:
    listed = client.get("/api/mcp/v0/servers").json()
    assert listed["total_count"] == 1 and listed["next"] is None
    (info,) = listed["servers"]
    assert info["id"] == "main" and info["name"] == "main" and info["description"] == "The support desk"
    assert info["version_detail"]["version"] == "1.0.0" and info["version_detail"]["is_latest"] is True
    detail = client.get("/api/mcp/v0/servers/main").json()
    assert detail["package_canonical"] == "" and detail["packages"] == [] and detail["remotes"] == []
    assert client.get("/api/mcp/v0/servers/main?version=1.0.0").status_code == 200
    other = client.get("/api/mcp/v0/servers/main?version=2.0.0")
    assert other.status_code == 404 and "not version '2.0.0'" in other.json()["error"]


def test_servers_are_paged_like_mastra() -> None:
    registry = Sluicegate(mcp_servers={"a": server, "b": server, "c": server})
    with TestClient(create_app(registry, ServerSettings())) as client:
        first = client.get("/api/mcp/v0/servers?perPage=2").json()
        assert [s["id"] for s in first["servers"]] == ["a", "b"] and first["total_count"] == 3
        assert first["next"] == "/mcp/v0/servers?perPage=2&page=1"
        second = client.get("/api/mcp/v0/servers?perPage=2&page=1").json()
        assert [s["id"] for s in second["servers"]] == ["c"] and second["next"] is None
        legacy = client.get("/api/mcp/v0/servers?limit=1&offset=1").json()
        assert [s["id"] for s in legacy["servers"]] == ["b"]
        assert legacy["next"] == "/mcp/v0/servers?limit=1&offset=2"


def test_tools_in_mastras_shape(client: TestClient) -> None:
    tools = {t["id"]: t for t in client.get("/api/mcp/main/tools").json()["tools"]}
    assert set(tools) == {"add", "wipe", "whoami", "ask_support"}
    assert tools["add"]["name"] == "add" and tools["add"]["inputSchema"]["required"] == ["a", "b"]
    assert tools["add"]["annotations"] == {"readOnlyHint": True} and "toolType" not in tools["add"]
    assert tools["ask_support"]["toolType"] == "agent"
    assert client.get("/api/mcp/main/tools/ask_support").json() == tools["ask_support"]


def test_execute_runs_tools_and_guarded_agents(client: TestClient) -> None:
    added = client.post("/api/mcp/main/tools/add/execute", json={"data": {"a": 2, "b": 3}})
    assert added.status_code == 200 and added.json() == {"result": {"sum": 5}}
    answer = client.post("/api/mcp/main/tools/ask_support/execute", json={"data": {"message": "refund?"}})
    assert answer.status_code == 200
    assert "Write to" in answer.json()["result"] and "jane.roe@example.com" not in answer.json()["result"]
    bad = client.post("/api/mcp/main/tools/add/execute", json={"data": {"a": "two", "b": 3}})
    assert bad.status_code == 400 and bad.json()["field"] == "data"
    posing = {"data": {"message": "x", "resourceId": "y"}}
    extra = client.post("/api/mcp/main/tools/ask_support/execute", json=posing)
    assert extra.status_code == 400 and extra.json()["field"] == "data"
    assert client.post("/api/mcp/main/tools/add/execute", json={"data": [1, 2]}).status_code == 400


def test_unknown_servers_and_tools_are_404s_naming_them(client: TestClient) -> None:
    for path in ("/api/mcp/v0/servers/nope", "/api/mcp/nope/tools", "/api/mcp/nope/tools/add"):
        missing = client.get(path)
        assert missing.status_code == 404 and "MCP server 'nope' not found" in missing.json()["error"]
    executed = client.post("/api/mcp/nope/tools/add/execute", json={"data": {}})
    assert executed.status_code == 404 and "'nope'" in executed.json()["error"]
    for response in (
        client.get("/api/mcp/main/tools/nope"),
        client.post("/api/mcp/main/tools/nope/execute", json={"data": {}}),
    ):
        assert response.status_code == 404
        assert response.json()["error"] == "tool 'nope' not found on MCP server 'main'"
    endpoint = client.post("/api/mcp/nope/mcp", json={})
    assert endpoint.status_code == 404 and endpoint.json()["error"] == "MCP server 'nope' not found"


def test_a_tool_that_needs_approval_is_refused_even_where_the_operator_allows_direct_runs() -> None:
    for allowed in (False, True):
        settings = ServerSettings(allow_unapproved_tool_execution=allowed)
        with TestClient(make_app(settings)) as client:
            refused = client.post("/api/mcp/main/tools/wipe/execute", json={"data": {}})
            assert refused.status_code == 403 and refused.json()["code"] == "TOOL_REQUIRES_APPROVAL"


def test_the_token_guards_every_mcp_route_and_the_endpoint() -> None:
    with TestClient(make_app(ServerSettings(api_token="s3cret"))) as client:
        for method, path in (
            ("GET", "/api/mcp/v0/servers"),
            ("GET", "/api/mcp/v0/servers/main"),
            ("GET", "/api/mcp/main/tools"),
            ("GET", "/api/mcp/main/tools/add"),
            ("POST", "/api/mcp/main/tools/add/execute"),
            ("POST", "/api/mcp/main/mcp"),
            ("GET", "/api/mcp/main/mcp"),
        ):
            assert client.request(method, path, json={"data": {"a": 1, "b": 2}}).status_code == 401, path
        authed = {"Authorization": "Bearer s3cret"}
        assert client.get("/api/mcp/main/tools", headers=authed).status_code == 200


def test_the_identity_hook_gates_the_routes_and_binds_the_resource() -> None:
    def resolve(request: Any) -> Identity | None:
        return Identity(resource_id="acme") if request.headers.get("x-user") == "acme" else None

    with TestClient(make_app(resolve_identity=resolve)) as client:
        assert client.get("/api/mcp/main/tools").status_code == 401
        assert client.post("/api/mcp/main/mcp", json={}).status_code == 401
        ran = client.post("/api/mcp/main/tools/whoami/execute", json={"data": {}}, headers={"x-user": "acme"})
        assert ran.json() == {"result": {"resource": "acme"}}
        posing = client.post(
            "/api/mcp/main/tools/whoami/execute",
            json={"data": {}, "requestContext": {RESOURCE_ID_KEY: "other"}},
            headers={"x-user": "acme"},
        )
        assert posing.status_code == 400


def test_the_endpoint_answers_503_outside_the_lifespan() -> None:
    client = TestClient(make_app())  # not entered: no lifespan, no session manager
    idle = client.post("/api/mcp/main/mcp", json={})
    assert idle.status_code == 503


# ------------------------------------------------------------------ the official client over HTTP


async def test_the_official_client_over_streamable_http_with_auth_and_identity() -> None:
    def resolve(request: Any) -> Identity | None:
        return Identity(resource_id="acme") if request.headers.get("x-user") == "acme" else None

    app = make_app(ServerSettings(api_token="s3cret"), resolve_identity=resolve)
    headers = {"Authorization": "Bearer s3cret", "x-user": "acme"}
    with serve_in_thread(app, lifespan="on") as base:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(f"{base}/api/mcp/main/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = {tool.name for tool in (await session.list_tools()).tools}
            assert listed == {"add", "wipe", "whoami", "ask_support"}
            added = await session.call_tool("add", {"a": 20, "b": 22})
            assert not added.is_error and added.structured_content == {"sum": 42}
            # The agent runs with its output processors: the MCP caller gets the redacted answer.
            answer = await session.call_tool("ask_support", {"message": "How do I get a refund?"})
            assert not answer.is_error and "Write to" in text(answer)
            assert "jane.roe@example.com" not in text(answer)
            # The call runs as the caller's resource, from the identity hook.
            who = await session.call_tool("whoami", {})
            assert who.structured_content == {"resource": "acme"}
            refused = await session.call_tool("wipe", {})
            assert refused.is_error and "needs a person's approval" in text(refused)
        async with httpx2.AsyncClient(timeout=30) as anonymous:
            denied = await anonymous.post(f"{base}/api/mcp/main/mcp", json={})
            assert denied.status_code == 401


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


# ------------------------------------------------------------------ `sluicegate mcp` over stdio

APP = """
from sluicegate import Sluicegate
from tests.mcp.sluicegate_server import server

print("loading the app")  # must not reach the client: stdout is the protocol's channel
app = Sluicegate(mcp_servers={"main": server, "spare": server})
"""


async def test_sluicegate_mcp_serves_an_app_server_over_stdio(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    before = children()
    command = [sys.executable, "-m", "sluicegate", "mcp", str(tmp_path / "app.py"), "--server", "main"]
    definition = {"command": command[0], "args": command[1:], "cwd": str(ROOT)}
    async with MCPClient(servers={"main": definition}) as mcp:
        tools = await mcp.list_tools()
        assert set(tools) == {"main_add", "main_wipe", "main_ask_support"}
        context = ToolContext(tool_call_id="c")
        assert await tools["main_add"].execute({"a": 1, "b": 2}, context) == {"sum": 3}
        answer = await tools["main_ask_support"].execute({"message": "refund?"}, context)
    assert "Write to" in str(answer) and "jane.roe@example.com" not in str(answer)
    assert children() == before


def test_sluicegate_mcp_names_the_servers_when_one_is_wrong_or_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    monkeypatch.syspath_prepend(str(ROOT))
    assert cli_main(["mcp", str(tmp_path / "app.py"), "--server", "nope"]) == 2
    assert "has no MCP server 'nope' (its servers: main, spare)" in capsys.readouterr().err
    assert cli_main(["mcp", str(tmp_path / "app.py")]) == 2
    assert "name the MCP server with --server (its servers: main, spare)" in capsys.readouterr().err


def test_what_the_app_prints_while_loading_stays_off_the_protocols_stdout(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    process = subprocess.run(
        [sys.executable, "-m", "sluicegate", "mcp", str(tmp_path / "app.py"), "--server", "main"],
        input=json.dumps(initialize) + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    lines = process.stdout.splitlines()
    assert lines and json.loads(lines[0])["id"] == 1, process.stdout
    assert "loading the app" in process.stderr and "loading the app" not in process.stdout


def test_the_endpoint_is_stateless_each_request_with_its_own_identity() -> None:
    """No session: a lone `tools/call` (no initialize, no session id) is answered, as the caller
    it authenticates as; so another worker, or another caller, has no session to join."""

    def resolve(request: Any) -> Identity | None:
        user = request.headers.get("x-user")
        return Identity(resource_id=user) if user in ("acme", "globex") else None

    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    accept = "application/json, text/event-stream"
    with TestClient(make_app(resolve_identity=resolve)) as client:
        for user in ("acme", "globex"):
            answer = client.post("/api/mcp/main/mcp", json=call, headers={"x-user": user, "accept": accept})
            assert answer.status_code == 200, answer.text
            assert "mcp-session-id" not in answer.headers
            data = next(line[5:] for line in answer.text.splitlines() if line.startswith("data:"))
            assert json.loads(data)["result"]["structuredContent"] == {"resource": user}


RELAY_APP = """
from sluicegate import Sluicegate
from sluicegate.mcp import MCPServer
from tests.durable.mcp_app import agent  # its tools come from an MCPClient, listed by the command

app = Sluicegate(mcp_servers={"main": MCPServer(name="main", version="1.0.0", agents={"relay": agent})})
"""


async def test_sluicegate_mcp_lists_an_agents_mcp_tools_and_stops_their_server(tmp_path: Path) -> None:
    """An agent served over stdio whose own tools come from an MCP server: the command lists
    them at its start, and stops that server when the client hangs up."""
    (tmp_path / "app.py").write_text(RELAY_APP, encoding="utf-8")
    before = children()
    command = [sys.executable, "-m", "sluicegate", "mcp", str(tmp_path / "app.py"), "--server", "main"]
    definition = {
        "command": command[0],
        "args": command[1:],
        "cwd": str(ROOT),
        "env": {"PYTHONPATH": str(ROOT)},
    }
    async with MCPClient(servers={"main": definition}, timeout=30) as mcp:
        tools = await mcp.list_tools()
        inner = children(*(children() - before))
        assert len(inner) == 1  # the agent's MCP server, started by the command at its start
        answer = await tools["main_ask_relay"].execute({"message": "echo"}, ToolContext(tool_call_id="c"))
    assert "hello over MCP" in str(answer)
    assert children() == before
    assert not [pid for pid in inner if alive(pid)]  # no MCP server left behind
