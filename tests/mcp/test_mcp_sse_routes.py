"""The older SSE transport at Mastra's `/api/mcp/{serverId}/sse` and `/messages`: the official
client's SSE transport through the token and the identity hook, and a session only its opener
can post into."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient
from mcp import ClientSession
from mcp.client.sse import sse_client
from tests.mcp.sluicegate_server import adder, wipe
from tests.server.live import serve_in_thread

from sluicegate import Sluicegate
from sluicegate.mcp import MCPServer
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.server import Identity, ServerSettings, create_app
from sluicegate.tools import ToolContext, create_tool

TOKEN = "s3cret"


async def whoami(input: Any, context: ToolContext) -> Any:
    return {"resource": context.request_context.get(RESOURCE_ID_KEY)}


def resolve(request: Any) -> Identity | None:
    user = request.headers.get("x-user")
    return Identity(resource_id=user) if user in ("acme", "globex") else None


def make_app() -> Any:
    served = MCPServer(
        name="main",
        version="1.0.0",
        tools={"add": adder, "wipe": wipe, "whoami": create_tool(id="whoami", execute=whoami)},
    )
    registry = Sluicegate(mcp_servers={"main": served}, resolve_identity=resolve)
    return create_app(registry, ServerSettings(api_token=TOKEN))


def caller(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}", "x-user": user}


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with serve_in_thread(make_app(), lifespan="on") as url:
        yield url


async def test_the_official_client_over_sse_runs_tools_as_the_caller(base: str) -> None:
    async with (
        sse_client(f"{base}/api/mcp/main/sse", headers=caller("acme"), timeout=30) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert {tool.name for tool in (await session.list_tools()).tools} == {"add", "wipe", "whoami"}
        added = await session.call_tool("add", {"a": 20, "b": 22})
        assert not added.is_error and added.structured_content == {"sum": 42}
        who = await session.call_tool("whoami", {})
        assert who.structured_content == {"resource": "acme"}
        refused = await session.call_tool("wipe", {})
        assert refused.is_error


async def test_a_session_takes_messages_only_from_the_caller_that_opened_it(base: str) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        http.stream("GET", f"{base}/api/mcp/main/sse", headers=caller("acme")) as stream,
    ):
        lines = stream.aiter_lines()
        endpoint = await first_endpoint(lines)
        assert endpoint.startswith("/api/mcp/main/messages?session_id=")
        other_resource = await http.post(f"{base}{endpoint}", json=ping, headers=caller("globex"))
        assert other_resource.status_code == 404
        no_identity = await http.post(
            f"{base}{endpoint}", json=ping, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert no_identity.status_code == 401
        owner = await http.post(f"{base}{endpoint}", json=ping, headers=caller("acme"))
        assert owner.status_code == 202


async def first_endpoint(lines: Any) -> str:
    event = None
    async for line in lines:
        if line.startswith("event:"):
            event = line.split(":", 1)[1].strip()
        elif line.startswith("data:") and event == "endpoint":
            return str(line.split(":", 1)[1].strip())
    raise AssertionError("the stream ended without an endpoint event")


def test_the_token_and_the_identity_gate_both_routes() -> None:
    with TestClient(make_app()) as client:
        for method, path in (("GET", "/api/mcp/main/sse"), ("POST", "/api/mcp/main/messages?session_id=00")):
            assert client.request(method, path).status_code == 401, path
            anonymous = client.request(method, path, headers={"Authorization": f"Bearer {TOKEN}"})
            assert anonymous.status_code == 401, path
        unknown = client.post(
            "/api/mcp/main/messages?session_id=" + "0" * 32, json={}, headers=caller("acme")
        )
        assert unknown.status_code == 404
        missing = client.get("/api/mcp/nope/sse", headers=caller("acme"))
        assert missing.status_code == 404 and "'nope'" in missing.json()["error"]


def test_the_sse_routes_answer_503_outside_the_lifespan() -> None:
    client = TestClient(make_app())  # not entered: no lifespan
    assert client.get("/api/mcp/main/sse", headers=caller("acme")).status_code == 503
    assert client.post("/api/mcp/main/messages", json={}, headers=caller("acme")).status_code == 503
