"""Input that used to be a 500: each is now a 400 naming the field at fault.

Bodies are sent as raw JSON text: `\\ud800` escapes and `NaN` are what a hostile client can put
on the wire (Python's decoder accepts both), though no JSON library would produce them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate, tool
from sluicegate.memory import Memory
from sluicegate.processors import UnicodeNormalizer
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing.echo_model import EchoModel


@tool
async def repeat(value: Any) -> dict[str, Any]:
    """Return the value it was given."""
    return {"value": value}


@pytest.fixture
def client() -> Iterator[TestClient]:
    memory = Memory()
    agent = Agent(
        name="echo",
        model=EchoModel(deltas=2),
        tools=[repeat],
        memory=memory,
        input_processors=[UnicodeNormalizer()],
    )
    registry = Sluicegate(
        agents={"echo": agent}, tools=[repeat], processors=[UnicodeNormalizer()], storage=memory.storage
    )
    with TestClient(create_app(registry, ServerSettings()), raise_server_exceptions=False) as client:
        created = client.post("/api/memory/threads", json={"resourceId": "u1", "threadId": "t1"})
        assert created.status_code == 200
        yield client


def _send(client: TestClient, method: str, path: str, body: dict[str, Any]) -> Any:
    raw = json.dumps(body)  # ensure_ascii: a lone surrogate goes out as a \\ud800 escape
    return client.request(method, path, content=raw, headers={"content-type": "application/json"})


MESSAGE = {"role": "user", "content": "hi"}
PROCESS = "/api/processors/unicode-normalizer/execute"
GENERATE = "/api/agents/echo/generate"

CASES: list[tuple[str, str, dict[str, Any], str]] = [
    # a non-object working memory template
    (
        "POST",
        GENERATE,
        {
            "messages": "hi",
            "memory": {"thread": "t1", "resource": "u1", "options": {"workingMemory": {"template": 5}}},
        },
        "memory.options.workingMemory.template",
    ),
    # createdAt out of any datetime's range, on every route that reads messages
    ("POST", GENERATE, {"messages": [{**MESSAGE, "createdAt": 2**70}]}, "messages"),
    ("POST", GENERATE, {"messages": [{**MESSAGE, "createdAt": -1e20}]}, "messages"),
    ("POST", "/api/agents/echo/stream", {"messages": [{**MESSAGE, "createdAt": 2**70}]}, "messages"),
    ("POST", PROCESS, {"phase": "input", "messages": [{**MESSAGE, "createdAt": -1e20}]}, "messages"),
    # a message id that is not a string
    ("POST", PROCESS, {"phase": "input", "messages": [{**MESSAGE, "id": ["m"]}]}, "messages"),
    # lone surrogates: tool data, processor messages, thread metadata, request context
    ("POST", "/api/tools/repeat/execute", {"data": {"value": "a\ud800"}}, "data.value"),
    ("POST", "/api/agents/echo/tools/repeat/execute", {"data": {"value": ["\udfff"]}}, "data.value.0"),
    (
        "POST",
        PROCESS,
        {"phase": "input", "messages": [{"role": "user", "content": "\ud800"}]},
        "messages.0.content",
    ),
    ("POST", "/api/memory/threads", {"resourceId": "u1", "metadata": {"a": "\ud800"}}, "metadata.a"),
    ("PATCH", "/api/memory/threads/t1", {"metadata": {"a": {"b": "\udc00"}}}, "metadata.a.b"),
    ("PATCH", "/api/memory/threads/t1", {"metadata": {"\ud800": 1}}, "metadata.\\ud800"),
    ("POST", GENERATE, {"messages": "hi", "requestContext": {"k": "\ud800"}}, "requestContext.k"),
    ("POST", GENERATE, {"messages": "\ud800"}, "messages"),
    # numbers JSON does not have
    (
        "POST",
        GENERATE,
        {"messages": "hi", "modelSettings": {"temperature": float("nan")}},
        "modelSettings.temperature",
    ),
    ("POST", "/api/tools/repeat/execute", {"data": {"value": float("inf")}}, "data.value"),
    ("POST", GENERATE, {"messages": [{**MESSAGE, "createdAt": float("-inf")}]}, "messages.0.createdAt"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), CASES, ids=[f"{c[3]}@{c[1]}" for c in CASES])
def test_input_that_was_a_500_is_a_400(
    client: TestClient, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    response = _send(client, method, path, body)
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["field"] == field
    assert answer["error"].startswith(f"{field}: ")


def test_the_refused_bodies_changed_nothing(client: TestClient) -> None:
    for method, path, body, _ in CASES:
        _send(client, method, path, body)
    threads = client.get("/api/memory/threads", params={"resourceId": "u1"}).json()
    assert [t["id"] for t in threads["threads"]] == ["t1"]
    assert threads["threads"][0]["metadata"] == {}


def test_valid_unicode_still_passes(client: TestClient) -> None:
    """Astral characters arrive as surrogate pairs in JSON escapes: a pair is valid text."""
    response = _send(client, "POST", "/api/tools/repeat/execute", {"data": {"value": "😀 é ∑"}})
    assert response.status_code == 200 and response.json() == {"value": "😀 é ∑"}
    raw = '{"data": {"value": "\\ud83d\\ude00"}}'
    pair = client.post("/api/tools/repeat/execute", content=raw, headers={"content-type": "application/json"})
    assert pair.json() == {"value": "😀"}
