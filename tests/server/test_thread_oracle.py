"""Another resource's thread looks like a thread that does not exist.

Reading, changing or deleting it answers exactly what an unknown id answers (404, same body).
Creating a thread with its id (POST /threads, or a run naming it) cannot succeed, and an
unused id can; that answer is one 409 "not available" on every route, never the 403 that
confirmed another tenant owns it, and it names no owner and shows no content."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request

from sluicegate import Agent, Sluicegate
from sluicegate.memory import Memory
from sluicegate.server import Identity, ServerSettings, create_app
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel


def _users(request: Request) -> Identity | None:
    user = request.headers.get("x-user")
    return Identity(resource_id=user) if user else None


def _app(with_hook: bool) -> TestClient:
    storage = SQLiteStore(":memory:")
    agent = Agent(name="echo", model=EchoModel(deltas=2), memory=Memory(storage=storage))
    registry = Sluicegate(agents=[agent], storage=storage, resolve_identity=_users if with_hook else None)
    return TestClient(create_app(registry, ServerSettings()))


@pytest.fixture(params=[True, False], ids=["identity-hook", "resourceId"])
def setup(request: pytest.FixtureRequest) -> Iterator[tuple[TestClient, dict[str, Any]]]:
    """A client, bob's thread `t-bob`, and how alice's requests say who she is."""
    with_hook: bool = request.param
    with _app(with_hook) as client:
        bob = {"headers": {"x-user": "bob"}} if with_hook else {}
        made = client.post(
            "/api/agents/echo/generate",
            json={"messages": "bob's secret", "memory": {"thread": "t-bob", "resource": "bob"}},
            **bob,
        )
        assert made.status_code == 200, made.text
        alice: dict[str, Any] = {"headers": {"x-user": "alice"}} if with_hook else {"resource": "alice"}
        yield client, alice


def _read(client: TestClient, alice: dict[str, Any], method: str, path: str) -> Any:
    headers = alice.get("headers", {})
    params = {"resourceId": alice["resource"]} if "resource" in alice and method != "PATCH" else {}
    body: dict[str, Any] | None = None
    if method == "PATCH":
        body = {"title": "pwned", **({"resourceId": alice["resource"]} if "resource" in alice else {})}
    return client.request(method, path, headers=headers, params=params, json=body)


def _create(client: TestClient, alice: dict[str, Any], route: str, thread: str) -> Any:
    headers = alice.get("headers", {})
    resource = {"resource": alice["resource"]} if "resource" in alice else {}
    if route == "threads":
        json: dict[str, Any] = {"threadId": thread}
        if resource:
            json["resourceId"] = alice["resource"]
        return client.post("/api/memory/threads", json=json, headers=headers)
    if route == "legacy":
        json = {"messages": "hi", "threadId": thread}
        if resource:
            json["resourceId"] = alice["resource"]
        return client.post("/api/agents/echo/generate", json=json, headers=headers)
    return client.post(
        f"/api/agents/echo/{route}",
        json={"messages": "hi", "memory": {"thread": thread, **resource}},
        headers=headers,
    )


READS = [
    ("GET", "/api/memory/threads/{id}"),
    ("PATCH", "/api/memory/threads/{id}"),
    ("DELETE", "/api/memory/threads/{id}"),
    ("GET", "/api/memory/threads/{id}/messages"),
]


@pytest.mark.parametrize(("method", "path"), READS)
def test_reading_another_resources_thread_answers_as_an_unknown_id(
    setup: tuple[TestClient, dict[str, Any]], method: str, path: str
) -> None:
    client, alice = setup
    theirs = _read(client, alice, method, path.format(id="t-bob"))
    unknown = _read(client, alice, method, path.format(id="t-nope"))
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.json() == {"error": "thread 't-bob' not found"}
    assert unknown.json() == {"error": "thread 't-nope' not found"}


@pytest.mark.parametrize("route", ["threads", "generate", "stream", "legacy"])
def test_creating_another_resources_thread_is_one_not_available_answer(
    setup: tuple[TestClient, dict[str, Any]], route: str
) -> None:
    client, alice = setup
    answer = _create(client, alice, route, "t-bob")
    assert answer.status_code == 409, answer.text
    field = {"threads": "threadId", "legacy": "threadId"}.get(route, "memory.thread")
    assert answer.json() == {
        "error": f"{field}: thread id 't-bob' is not available; use another",
        "field": field,
    }
    assert _create(client, alice, route, f"t-alice-{route}").status_code == 200


def test_nothing_of_bobs_thread_changed(setup: tuple[TestClient, dict[str, Any]]) -> None:
    client, alice = setup
    for method, path in READS:
        _read(client, alice, method, path.format(id="t-bob"))
    for route in ("threads", "generate", "stream", "legacy"):
        _create(client, alice, route, "t-bob")
    bob = {"headers": {"x-user": "bob"}} if "headers" in alice else {}
    params = {} if bob else {"resourceId": "bob"}
    thread = client.get("/api/memory/threads/t-bob", params=params, **bob)
    assert thread.status_code == 200 and thread.json()["title"] != "pwned"
    messages = client.get("/api/memory/threads/t-bob/messages", params=params, **bob).json()
    assert messages["total"] == 2
