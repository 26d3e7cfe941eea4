"""The identity hook: every route that reads or writes a resource's data is bound to the
authenticated resource (and pinned thread), and a request naming another one is refused.

The route table test classifies every `/api` route of the app; a new route fails it until it
is added to one of the tables below (and so to the tests that go with that table)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import HTTPException
from fastapi.testclient import TestClient
from starlette.requests import Request

from sluicegate import RESOURCE_ID_KEY, THREAD_ID_KEY, Agent, Sluicegate, ToolContext, tool
from sluicegate.errors import ConfigurationError
from sluicegate.memory import Memory
from sluicegate.processors import Processor
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.server import Identity, ServerSettings, create_app
from sluicegate.server.identity import warn_if_exposed
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel

from .helpers import sse_events


class CountingEcho(EchoModel):
    """Echoes, and counts the model calls (a refused request must make none)."""

    calls = 0

    async def do_stream(self, options: Any) -> Any:
        type(self).calls += 1
        return await super().do_stream(options)


@tool
async def whoami(context: ToolContext) -> dict[str, Any]:
    """Report the resource, thread and plan the call's request context carries."""
    ctx = context.request_context
    assert ctx is not None
    return {"resource": ctx.get(RESOURCE_ID_KEY), "thread": ctx.get(THREAD_ID_KEY), "plan": ctx.get("plan")}


class Whoami(Processor):
    """Trips with the resource the request context carries, so a test can read it."""

    id = "whoami"

    def process_input(self, args: ProcessInputArgs) -> None:
        context = args.request_context
        args.abort(f"resource={context.get(RESOURCE_ID_KEY) if context is not None else None}")


def users(request: Request) -> Identity | None:
    """Test identity hook: `x-user` authenticates, `x-thread` pins a thread, `x-plan` adds a
    server-side context value."""
    user = request.headers.get("x-user")
    if user is None:
        return None
    plan = request.headers.get("x-plan")
    return Identity(
        resource_id=user, thread_id=request.headers.get("x-thread"), context={"plan": plan} if plan else {}
    )


def _registry(resolve: Callable[[Request], Any] | None = users) -> Sluicegate:
    storage = SQLiteStore(":memory:")
    echo = Agent(name="echo", model=CountingEcho(deltas=2), tools=[whoami], memory=Memory(storage=storage))
    plain = Agent(name="plain", model=CountingEcho(deltas=2))
    return Sluicegate(
        agents={"echo": echo, "plain": plain},
        processors=[Whoami()],
        tools=[whoami],
        storage=storage,
        resolve_identity=resolve,
    )


ALICE = {"x-user": "alice"}
BOB = {"x-user": "bob"}


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(_registry(), ServerSettings(studio=True))) as client:
        # bob's conversation, created through the API as bob
        done = client.post(
            "/api/agents/echo/generate",
            json={"messages": "bob's secret", "memory": {"thread": "t-bob"}},
            headers=BOB,
        )
        assert done.status_code == 200, done.text
        yield client


def _bob_untouched(client: TestClient) -> None:
    thread = client.get("/api/memory/threads/t-bob", headers=BOB)
    assert thread.status_code == 200 and thread.json()["title"] != "pwned"
    messages = client.get("/api/memory/threads/t-bob/messages", headers=BOB).json()["messages"]
    texts = [m["content"]["content"] if isinstance(m["content"], dict) else m["content"] for m in messages]
    assert len(messages) == 2, texts  # bob's question and the echo, nothing more
    assert client.get("/api/memory/threads", headers=BOB).json()["total"] == 1


# ----------------------------------------------------------------------------- the route table

# Routes that read or write a resource's threads: each case names bob's resource (or thread)
# while authenticated as alice, and must be refused with 403.
NAMING_BOB: list[tuple[str, str, dict[str, Any]]] = [
    (
        "POST",
        "/api/agents/{agentId}/generate",
        {"json": {"messages": "hi", "memory": {"thread": "t-new", "resource": "bob"}}},
    ),
    (
        "POST",
        "/api/agents/{agentId}/generate",
        {"json": {"messages": "hi", "threadId": "t-new", "resourceId": "bob"}},
    ),
    (
        "POST",
        "/api/agents/{agentId}/generate",
        {"json": {"messages": "hi", "memory": {"thread": "t-new", "resource": "alice"}, "resourceId": "bob"}},
    ),
    (
        "POST",
        "/api/agents/{agentId}/stream",
        {"json": {"messages": "hi", "memory": {"thread": "t-new", "resource": "bob"}}},
    ),
    (
        "POST",
        "/api/agents/{agentId}/stream",
        {"json": {"messages": "hi", "threadId": "t-bob", "resourceId": "bob"}},
    ),
    ("GET", "/api/memory/threads", {"params": {"resourceId": "bob", "agentId": "echo"}}),
    ("POST", "/api/memory/threads", {"json": {"resourceId": "bob", "threadId": "t-planted"}}),
    ("GET", "/api/memory/threads/{threadId}", {"params": {"resourceId": "bob"}}),
    ("PATCH", "/api/memory/threads/{threadId}", {"json": {"resourceId": "bob", "title": "pwned"}}),
    ("DELETE", "/api/memory/threads/{threadId}", {"params": {"resourceId": "bob"}}),
    ("GET", "/api/memory/threads/{threadId}/messages", {"params": {"resourceId": "bob"}}),
    # Runs by id: naming bob is a 403; bob's run by id alone is a 404 (tests/server/test_hitl_identity.py).
    ("GET", "/api/agents/{agentId}/suspended-runs", {"params": {"resourceId": "bob"}}),
    ("POST", "/api/agents/{agentId}/approve-tool-call", {"json": {"runId": "r-1", "resourceId": "bob"}}),
    ("POST", "/api/agents/{agentId}/decline-tool-call", {"json": {"runId": "r-1", "resourceId": "bob"}}),
    (
        "POST",
        "/api/agents/{agentId}/approve-tool-call-generate",
        {"json": {"runId": "r-1", "resourceId": "bob"}},
    ),
    (
        "POST",
        "/api/agents/{agentId}/decline-tool-call-generate",
        {"json": {"runId": "r-1", "resourceId": "bob"}},
    ),
    (
        "POST",
        "/api/agents/{agentId}/resume-stream",
        {"json": {"runId": "r-1", "resumeData": {}, "resourceId": "bob"}},
    ),
    ("POST", "/api/agents/{agentId}/observe", {"json": {"runId": "r-1", "resourceId": "bob"}}),
    # Agent signals (tests/server/test_mastra_signals.py).
    ("POST", "/api/agents/{agentId}/threads/subscribe", {"json": {"threadId": "t-bob", "resourceId": "bob"}}),
    ("POST", "/api/agents/{agentId}/threads/abort", {"json": {"threadId": "t-bob", "resourceId": "bob"}}),
    (
        "POST",
        "/api/agents/{agentId}/send-message",
        {"json": {"threadId": "t-bob", "resourceId": "bob", "message": "hi"}},
    ),
    (
        "POST",
        "/api/agents/{agentId}/queue-message",
        {"json": {"threadId": "t-new", "resourceId": "bob", "message": "hi"}},
    ),
    (
        "GET",
        "/api/memory/threads/{threadId}/working-memory",
        {"params": {"resourceId": "bob", "agentId": "echo"}},
    ),
    (
        "POST",
        "/api/memory/threads/{threadId}/working-memory",
        {"params": {"agentId": "echo"}, "json": {"workingMemory": "pwned", "resourceId": "bob"}},
    ),
]

# The same routes naming only bob's thread (no resource): an agent run gets the 409 a taken
# thread id gets when creating one, a memory route answers 404 as if the thread did not exist.
BOBS_THREAD_ONLY: list[tuple[str, str, dict[str, Any], int]] = [
    (
        "POST",
        "/api/agents/{agentId}/generate",
        {"json": {"messages": "hi", "memory": {"thread": "t-bob"}}},
        409,
    ),
    (
        "POST",
        "/api/agents/{agentId}/stream",
        {"json": {"messages": "hi", "memory": {"thread": "t-bob"}}},
        409,
    ),
    ("POST", "/api/agents/{agentId}/generate", {"json": {"messages": "hi", "threadId": "t-bob"}}, 409),
    ("POST", "/api/agents/{agentId}/send-message", {"json": {"threadId": "t-bob", "message": "hi"}}, 409),
    (  # AG-UI names no resource: its thread is the caller's or taken
        "POST",
        "/api/agents/{agentId}/ag-ui",
        {
            "json": {
                "threadId": "t-bob",
                "runId": "r",
                "messages": [{"id": "m", "role": "user", "content": "hi"}],
            }
        },
        409,
    ),
    ("POST", "/api/agents/{agentId}/threads/subscribe", {"json": {"threadId": "t-bob"}}, 404),
    ("POST", "/api/agents/{agentId}/threads/abort", {"json": {"threadId": "t-bob"}}, 404),
    ("GET", "/api/memory/threads/{threadId}", {}, 404),
    ("PATCH", "/api/memory/threads/{threadId}", {"json": {"title": "pwned"}}, 404),
    ("DELETE", "/api/memory/threads/{threadId}", {}, 404),
    ("GET", "/api/memory/threads/{threadId}/messages", {}, 404),
]

# Routes that run code with a request context: it carries the authenticated resource, whatever
# the client sends.
CONTEXT_BOUND = {
    ("POST", "/api/tools/{toolId}/execute"),
    ("POST", "/api/agents/{agentId}/tools/{toolId}/execute"),
    ("POST", "/api/processors/{processorId}/execute"),
    # An MCP server's tools run as the caller's resource (tests/mcp/test_mcp_routes.py).
    ("POST", "/api/mcp/{serverId}/tools/{toolId}/execute"),
    # The Responses API and A2A: runs, stored responses and tasks bound to the caller's resource
    # (tests/server/protocols/test_responses.py, test_a2a.py: another caller gets 404 / not found).
    ("POST", "/api/v1/responses"),
    ("GET", "/api/v1/responses/{responseId}"),
    ("DELETE", "/api/v1/responses/{responseId}"),
    ("POST", "/api/a2a/{agentId}"),
}

# The studio's run views: a caller sees only its own resource's runs.
TRACES = {
    ("GET", "/api/studio/traces"),
    ("GET", "/api/studio/traces/{traceId}"),
    # Mastra's observability routes over the same spans (tests/server/test_mastra_routes.py).
    ("POST", "/api/observability/traces/query"),
    ("POST", "/api/observability/traces/query/values"),
    ("GET", "/api/observability/traces/{traceId}"),
    ("GET", "/api/observability/traces/{traceId}/light"),
    ("GET", "/api/observability/traces/{traceId}/spans/{spanId}"),
    ("GET", "/api/observability/discovery/entity-types"),
    ("GET", "/api/observability/discovery/entity-names"),
    ("GET", "/api/observability/discovery/service-names"),
    ("POST", "/api/observability/metrics/aggregate"),
    ("POST", "/api/observability/metrics/breakdown"),
    ("POST", "/api/observability/metrics/timeseries"),
    ("POST", "/api/observability/metrics/percentiles"),
    # Kept eval reports as scores: a caller sees only the reports it ran
    # (tests/server/test_mastra_eval_scores.py).
    ("GET", "/api/scores/scorers"),
    ("GET", "/api/scores/scorers/{scorerId}"),
    ("GET", "/api/scores/scorer/{scorerId}"),
}

# Configuration only: no resource's data (still behind the identity gate).
NO_TENANT_DATA = {
    ("GET", "/api/.well-known/{agentId}/agent-card.json"),  # an A2A agent card
    ("GET", "/api/agents"),
    ("GET", "/api/agents/{agentId}"),
    ("GET", "/api/agents/{agentId}/tools/{toolId}"),
    ("GET", "/api/tools"),
    ("GET", "/api/tools/{toolId}"),
    ("GET", "/api/processors"),
    ("GET", "/api/processors/{processorId}"),
    # Scores a processor chain on the caller's own uploaded text; memory processors never run.
    ("POST", "/api/eval"),
    # What Mastra's Studio asks besides: capabilities, providers, memory settings, and the
    # empty answers of features sluicegate does not have.
    ("GET", "/api/auth/capabilities"),
    ("GET", "/api/auth/me"),
    ("GET", "/api/agents/providers"),
    ("GET", "/api/memory/status"),
    ("GET", "/api/memory/config"),
    ("POST", "/api/observability/traces/query/fields"),
    ("GET", "/api/observability/discovery/environments"),
    ("GET", "/api/observability/discovery/tags"),
    ("GET", "/api/observability/logs"),
    ("GET", "/api/observability/feedback"),
    ("GET", "/api/observability/scores"),
    ("GET", "/api/workflows"),
    ("GET", "/api/workflows/run-counts"),
    ("GET", "/api/mcp/v0/servers"),
    ("GET", "/api/mcp/v0/servers/{id}"),
    ("GET", "/api/mcp/{serverId}/tools"),
    ("GET", "/api/mcp/{serverId}/tools/{toolId}"),
    ("GET", "/api/workspaces"),
    ("GET", "/api/tool-providers"),
    ("GET", "/api/processor-providers"),
    ("GET", "/api/stored/prompt-blocks"),
    ("GET", "/api/stored/agents"),
    ("GET", "/api/datasets"),
    ("GET", "/api/experiments"),
    ("GET", "/api/experiments/review-summary"),
    ("GET", "/api/editor/builder/settings"),
    ("GET", "/api/editor/builder/models/available"),
    ("GET", "/api/system/packages"),
    ("GET", "/api/channels/platforms"),
    ("GET", "/api/agents/{agentId}/voice/speakers"),
}


def _api_operations() -> dict[tuple[str, str], dict[str, Any]]:
    """Every `/api/...` operation of the app, from its OpenAPI schema."""
    schema = create_app(_registry(), ServerSettings(studio=True)).openapi()
    return {
        (method.upper(), path): operation
        for path, operations in schema["paths"].items()
        if path.startswith("/api/")
        for method, operation in operations.items()
    }


def _api_routes() -> set[tuple[str, str]]:
    return set(_api_operations())


def _names_ids(operation: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Whether an operation takes a resource or thread id (query, path or body)."""
    names = {p["name"] for p in operation.get("parameters", [])}
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    if "$ref" in body:
        body = schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[-1]]
    names |= set(body.get("properties", {}))
    return bool(names & {"resourceId", "threadId", "memory"})


def test_every_api_route_is_classified() -> None:
    """A new route must join a table above (and so its tenancy tests) before this passes."""
    checked = {(m, p) for m, p, _ in NAMING_BOB} | {(m, p) for m, p, _, _ in BOBS_THREAD_ONLY}
    classified = checked | CONTEXT_BOUND | TRACES | NO_TENANT_DATA
    routes = _api_routes()
    assert len(routes) >= 20
    assert routes - classified == set(), "unclassified routes: add them to a table in this file"
    assert classified - routes == set(), "the tables name routes that do not exist"
    schema = create_app(_registry(), ServerSettings(studio=True)).openapi()
    takes_ids = {key for key, operation in _api_operations().items() if _names_ids(operation, schema)}
    assert takes_ids == {(m, p) for m, p, _ in NAMING_BOB}, "a route that takes ids needs a 403 case"


def _url(path: str) -> str:
    return path.format(
        agentId="echo",
        threadId="t-bob",
        toolId="whoami",
        processorId="whoami",
        traceId="0" * 32,
        spanId="0" * 16,
        scorerId="eval:echo:input",
        serverId="main",
        id="main",
        responseId="resp_0",
    )


@pytest.mark.parametrize(
    ("method", "path", "kwargs"), NAMING_BOB, ids=[f"{m} {p} #{i}" for i, (m, p, _) in enumerate(NAMING_BOB)]
)
def test_alice_naming_bob_is_refused(
    client: TestClient, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    calls = CountingEcho.calls
    response = client.request(method, _url(path), headers=ALICE, **kwargs)
    assert response.status_code == 403, response.text
    assert "field" in response.json()
    assert CountingEcho.calls == calls, "a refused request must not reach the model"
    _bob_untouched(client)
    assert client.get("/api/memory/threads/t-planted", headers=BOB).status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    BOBS_THREAD_ONLY,
    ids=[f"{m} {p} #{i}" for i, (m, p, _, _) in enumerate(BOBS_THREAD_ONLY)],
)
def test_alice_cannot_reach_bobs_thread_by_id(
    client: TestClient, method: str, path: str, kwargs: dict[str, Any], status: int
) -> None:
    calls = CountingEcho.calls
    response = client.request(method, _url(path), headers=ALICE, **kwargs)
    assert response.status_code == status, response.text
    assert "bob's secret" not in response.text
    assert CountingEcho.calls == calls
    _bob_untouched(client)


def test_alice_lists_only_her_own_threads(client: TestClient) -> None:
    mine = client.get("/api/memory/threads", headers=ALICE)
    assert mine.status_code == 200 and mine.json()["threads"] == []
    created = client.post("/api/memory/threads", json={"title": "Mine"}, headers=ALICE)
    assert created.status_code == 200 and created.json()["resourceId"] == "alice"
    named = client.post(
        "/api/memory/threads", json={"resourceId": "alice", "threadId": "t-a2"}, headers=ALICE
    )
    assert named.json()["resourceId"] == "alice"
    listed = client.get("/api/memory/threads", params={"resourceId": "alice"}, headers=ALICE).json()
    assert sorted(t["id"] for t in listed["threads"]) == sorted([created.json()["id"], "t-a2"])
    assert client.post("/api/memory/threads", json={"threadId": "t-bob"}, headers=ALICE).status_code == 409


def test_alice_runs_on_her_resource_without_naming_it(client: TestClient) -> None:
    done = client.post(
        "/api/agents/echo/generate",
        json={"messages": "hello", "memory": {"thread": "t-alice"}},
        headers=ALICE,
    )
    assert done.status_code == 200, done.text
    again = client.post(
        "/api/agents/echo/stream",
        json={"messages": "more", "memory": {"thread": {"id": "t-alice"}, "resource": "alice"}},
        headers=ALICE,
    )
    assert sse_events(again.text)[1]
    thread = client.get("/api/memory/threads/t-alice", headers=ALICE).json()
    assert thread["resourceId"] == "alice"
    assert client.get("/api/memory/threads/t-alice/messages", headers=ALICE).json()["total"] == 4
    assert client.get("/api/memory/threads/t-alice", headers=BOB).status_code == 404


def test_a_pinned_thread_limits_every_route(client: TestClient) -> None:
    pinned = {**ALICE, "x-thread": "t-pin"}
    assert client.post("/api/memory/threads", json={"threadId": "t-other"}, headers=ALICE).status_code == 200
    # no memory in the body: the run uses the pinned thread
    done = client.post("/api/agents/echo/generate", json={"messages": "pinned"}, headers=pinned)
    assert done.status_code == 200, done.text
    assert client.get("/api/memory/threads/t-pin/messages", headers=pinned).json()["total"] == 2
    listed = client.get("/api/memory/threads", headers=pinned).json()
    assert [t["id"] for t in listed["threads"]] == ["t-pin"]
    other = {"json": {"messages": "x", "memory": {"thread": "t-other"}}}
    assert client.post("/api/agents/echo/generate", headers=pinned, **other).status_code == 403
    assert client.post("/api/agents/echo/stream", headers=pinned, **other).status_code == 403
    for method, path in [
        ("GET", "/api/memory/threads/t-other"),
        ("PATCH", "/api/memory/threads/t-other"),
        ("DELETE", "/api/memory/threads/t-other"),
        ("GET", "/api/memory/threads/t-other/messages"),
    ]:
        kwargs: dict[str, Any] = {"json": {"title": "x"}} if method == "PATCH" else {}
        assert client.request(method, path, headers=pinned, **kwargs).status_code == 403, (method, path)
    assert client.post("/api/memory/threads", json={"threadId": "t-x"}, headers=pinned).status_code == 403
    assert client.get("/api/memory/threads/t-other", headers=ALICE).status_code == 200  # still there


@pytest.mark.parametrize("path", ["/api/tools/whoami/execute", "/api/agents/echo/tools/whoami/execute"])
def test_tools_see_the_authenticated_resource(client: TestClient, path: str) -> None:
    headers = {**ALICE, "x-thread": "t-pin", "x-plan": "pro"}
    body = {"data": {}, "requestContext": {"plan": "free"}}
    assert client.post(path, json=body, headers=headers).json() == {
        "resource": "alice",
        "thread": "t-pin",
        "plan": "pro",  # the identity's value, not the client's
    }
    spoof = {"data": {}, "requestContext": {RESOURCE_ID_KEY: "bob"}}
    assert client.post(path, json=spoof, headers=ALICE).status_code == 400


def test_processors_see_the_authenticated_resource(client: TestClient) -> None:
    body = {"phase": "input", "messages": [{"role": "user", "content": "hi"}]}
    answer = client.post("/api/processors/whoami/execute", json=body, headers=ALICE).json()
    assert answer["tripwire"]["reason"] == "resource=alice"
    spoof = {**body, "requestContext": {THREAD_ID_KEY: "t-bob"}}
    assert client.post("/api/processors/whoami/execute", json=spoof, headers=ALICE).status_code == 400


def test_agent_runs_carry_the_identity_in_their_context(client: TestClient) -> None:
    """Without memory too: cost guards and caches scope by the request context's resource."""
    seen: list[Any] = []

    class Spy(Processor):
        id = "spy"

        def process_input(self, args: ProcessInputArgs) -> None:
            context = args.request_context
            assert context is not None
            seen.append((context.get(RESOURCE_ID_KEY), context.get(THREAD_ID_KEY), context.get("plan")))

    registry = _registry()
    registry.get_agent("plain").input_processors = [Spy()]  # type: ignore[union-attr]
    with TestClient(create_app(registry, ServerSettings())) as other:
        headers = {**ALICE, "x-plan": "pro"}
        body = {"messages": "hi", "requestContext": {"plan": "free"}}
        assert other.post("/api/agents/plain/generate", json=body, headers=headers).status_code == 200
        assert (
            other.post("/api/agents/plain/stream", json=body, headers={**ALICE, "x-thread": "t9"}).status_code
            == 200
        )
    assert seen == [("alice", None, "pro"), ("alice", "t9", "free")]  # no identity value: the client's


def test_the_studio_shows_a_caller_only_its_own_runs(client: TestClient) -> None:
    mine = client.post("/api/agents/plain/generate", json={"messages": "hi"}, headers=ALICE)
    bobs = client.post("/api/agents/plain/generate", json={"messages": "hi"}, headers=BOB)
    mine_id, bobs_id = mine.headers["x-sluicegate-trace-id"], bobs.headers["x-sluicegate-trace-id"]
    listed = {t["traceId"] for t in client.get("/api/studio/traces", headers=ALICE).json()}
    assert mine_id in listed and bobs_id not in listed
    assert client.get(f"/api/studio/traces/{mine_id}", headers=ALICE).status_code == 200
    assert client.get(f"/api/studio/traces/{bobs_id}", headers=ALICE).status_code == 404
    assert client.get(f"/api/studio/traces/{bobs_id}", headers=BOB).status_code == 200


# ----------------------------------------------------------------------------- the gate


def _client_with(resolve: Callable[[Request], Any]) -> TestClient:
    return TestClient(create_app(_registry(resolve), ServerSettings()))


def test_no_identity_is_401_and_the_probe_and_preflight_pass(client: TestClient) -> None:
    for method, path in sorted(_api_routes()):
        response = client.request(method, _url(path))
        assert response.status_code == 401, (method, path, response.text)
    assert client.get("/api").status_code == 200
    assert client.get("/openapi.json").status_code == 200
    assert client.options("/api/agents").status_code != 401


@pytest.mark.parametrize(
    ("resolve", "status"),
    [
        (lambda r: (_ for _ in ()).throw(HTTPException(403, "suspended")), 403),
        (lambda r: (_ for _ in ()).throw(RuntimeError("database down")), 500),
        (lambda r: {"resource_id": "alice"}, 500),  # not an Identity: fail closed
    ],
    ids=["http-exception", "raises", "wrong-type"],
)
def test_a_failing_hook_fails_closed(resolve: Callable[[Request], Any], status: int, caplog: Any) -> None:
    with _client_with(resolve) as client:
        response = client.get("/api/memory/threads", params={"resourceId": "bob"})
    assert response.status_code == status
    assert "database down" not in response.text


def test_an_async_hook(caplog: Any) -> None:
    async def resolve(request: Request) -> Identity | None:
        await asyncio.sleep(0)
        return Identity(resource_id="alice") if request.headers.get("authorization") == "Bearer a" else None

    with _client_with(resolve) as client:
        assert client.get("/api/memory/threads").status_code == 401
        ok = client.get("/api/memory/threads", headers={"authorization": "Bearer a"})
        assert ok.status_code == 200 and ok.json()["total"] == 0


def test_the_hook_and_the_bearer_token_together() -> None:
    app = create_app(_registry(), ServerSettings(api_token="s3cret"))
    with TestClient(app) as client:
        assert client.get("/api/agents", headers=ALICE).status_code == 401  # no token
        token = {"authorization": "Bearer s3cret"}
        assert client.get("/api/agents", headers=token).status_code == 401  # no identity
        assert client.get("/api/agents", headers={**token, **ALICE}).status_code == 200


@pytest.mark.parametrize(
    "kwargs",
    [
        {"resource_id": ""},
        {"resource_id": 7},
        {"resource_id": "a\x00b"},
        {"resource_id": "a", "thread_id": ""},
        {"resource_id": "a", "context": {RESOURCE_ID_KEY: "b"}},
        {"resource_id": "a", "context": {"sluicegate__x": 1}},
        {"resource_id": "a", "context": ["plan"]},
    ],
)
def test_identity_rejects_what_it_cannot_mean(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        Identity(**kwargs)


def test_the_registry_rejects_a_hook_that_is_not_callable() -> None:
    with pytest.raises(ConfigurationError, match="resolve_identity"):
        Sluicegate(resolve_identity="alice")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- without a hook


def test_without_a_hook_the_body_decides_as_before() -> None:
    with TestClient(create_app(_registry(None), ServerSettings())) as client:
        made = client.post("/api/memory/threads", json={"resourceId": "bob", "threadId": "t1"})
        assert made.status_code == 200
        assert client.get("/api/memory/threads", params={"resourceId": "bob"}).json()["total"] == 1
        missing = client.get("/api/memory/threads")
        assert missing.status_code == 400 and missing.json()["field"] == "resourceId"
        assert client.post("/api/memory/threads", json={"threadId": "t2"}).status_code == 400


@pytest.mark.parametrize(
    ("host", "warned"),
    [
        ("0.0.0.0", True),
        ("::", True),
        ("192.168.1.5", True),
        ("example.org", True),
        ("127.0.0.1", False),
        ("::1", False),
        ("[::1]", False),
        ("localhost", False),
    ],
)
def test_a_warning_when_exposed_without_a_hook(host: str, warned: bool, caplog: Any) -> None:
    with caplog.at_level(logging.WARNING, logger="sluicegate.server"):
        assert warn_if_exposed(host, _registry(None)) is warned
        assert warn_if_exposed(host, _registry()) is False
    assert ("without an identity hook" in caplog.text) is warned


def test_serve_warns_at_startup(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    import uvicorn
    from tests.server.test_cli import EXAMPLE

    from sluicegate.cli import main

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)
    monkeypatch.setenv("SLUICEGATE_APP", "")  # restored afterwards: serve sets it
    with caplog.at_level(logging.WARNING, logger="sluicegate.server"):
        assert main(["serve", EXAMPLE, "--host", "0.0.0.0"]) == 0
        assert "without an identity hook" in caplog.text
        caplog.clear()
        assert main(["serve", EXAMPLE]) == 0
        assert caplog.text == ""


def test_the_gates_hold_when_the_app_is_mounted_under_a_prefix() -> None:
    """Starlette keeps the parent's prefix in `path`: the gates must check the routed path."""
    from fastapi import FastAPI

    parent = FastAPI()
    parent.mount("/chat", create_app(_registry(), ServerSettings(api_token="s3cret")))
    token = {"authorization": "Bearer s3cret"}
    with TestClient(parent) as client:
        assert client.get("/chat/api/agents").status_code == 401  # no token
        assert client.get("/chat/api/agents", headers=token).status_code == 401  # no identity
        assert client.get("/chat/api/agents", headers={**token, **ALICE}).status_code == 200
        refused = client.get(
            "/chat/api/memory/threads", params={"resourceId": "bob"}, headers={**token, **ALICE}
        )
        assert refused.status_code == 403
        assert client.get("/chat/api").status_code == 200  # the liveness probe stays open


def test_a_route_the_gate_did_not_cover_fails_closed() -> None:
    from sluicegate.server.errors import ApiError
    from sluicegate.server.identity import identity_of

    app = create_app(_registry(), ServerSettings())
    request = Request({"type": "http", "method": "GET", "path": "/elsewhere", "headers": [], "app": app})
    with pytest.raises(ApiError) as raised:
        identity_of(request)
    assert raised.value.status == 401
    open_app = create_app(_registry(None), ServerSettings())
    assert identity_of(Request({**request.scope, "app": open_app})) is None
