"""The server's answers to a new user's first mistakes: a body that is not a JSON object, a
thread without its resource, an unknown agent, and Swagger's Authorize button."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate
from sluicegate.memory import Memory
from sluicegate.server import ServerSettings, create_app
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel


def _client(**settings: Any) -> TestClient:
    agents = [
        Agent("support", model=EchoModel(), memory=Memory(storage=SQLiteStore(":memory:"))),
        Agent("billing", model=EchoModel()),
    ]
    return TestClient(create_app(Sluicegate(agents=agents), ServerSettings(**settings)))


@pytest.mark.parametrize(
    ("body", "content_type", "got"),
    [
        ('"hello"', "application/json", "a JSON string"),
        ("[1, 2]", "application/json", "a JSON array"),
        ("42", "application/json", "a JSON number"),
        ("null", "application/json", "null"),
        ("hello", "text/plain", "a body that is not JSON"),
    ],
)
def test_a_body_that_is_not_an_object_is_told_to_send_one(body: str, content_type: str, got: str) -> None:
    response = _client().post(
        "/api/agents/support/generate", content=body, headers={"content-type": content_type}
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": f"body: send a JSON object (content-type: application/json), got {got}",
        "field": "body",
    }
    assert "dictionary" not in response.text


@pytest.mark.parametrize("route", ["generate", "stream"])
def test_a_thread_without_its_resource_names_the_field_in_json(route: str) -> None:
    client = _client()
    response = client.post(
        f"/api/agents/support/{route}", json={"messages": "hi", "memory": {"thread": "t-1"}}
    )
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "memory.resource"
    assert '"memory": {"thread": "<thread id>", "resource": "<user or account id>"}' in body["error"]
    assert "{'thread'" not in body["error"]
    legacy = client.post(f"/api/agents/support/{route}", json={"messages": "hi", "threadId": "t-1"})
    assert legacy.status_code == 400 and legacy.json()["field"] == "resourceId"


def test_an_unknown_agent_lists_the_agents() -> None:
    client = _client()
    for response in (
        client.get("/api/agents/suport"),
        client.post("/api/agents/suport/generate", json={"messages": "hi"}),
    ):
        assert response.status_code == 404
        assert response.json() == {
            "error": "agent 'suport' not found; agents: support, billing",
            "field": "agentId",
            "agents": ["support", "billing"],
        }


def test_openapi_declares_the_bearer_scheme() -> None:
    schema = _client().get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert "security" not in schema  # an open server needs no token
    tokened = (
        _client(api_token="s3cret").get("/openapi.json", headers={"authorization": "Bearer s3cret"}).json()
    )
    assert tokened["security"] == [{"bearerAuth": []}]
    assert tokened["components"]["securitySchemes"]["bearerAuth"]["type"] == "http"
