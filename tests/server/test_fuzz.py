"""Fuzzing the API: no input may produce a 500.

Two passes, both in-process (ASGI, no network) and deterministic, so CI sees the same cases on
every run:

- schemathesis generates requests from the app's own OpenAPI schema, valid and invalid, and
  checks the answers against the schema too;
- a grid puts each hostile value (a lone surrogate, NaN, huge or negative numbers, wrong types,
  deep nesting) into each field of a valid body of every route that takes one, one at a time.
  The schema cannot lead schemathesis there: it never generates lone surrogates, and the
  free-form fields (messages, metadata, tool data, memory options) have no schema to follow.
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from sluicegate.server import ServerSettings, create_app


def _app() -> Any:
    import tests.server.example_app as example

    example = importlib.reload(example)
    return create_app(example.registry, ServerSettings(request_timeout=5))


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())

CHECKS = (not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance)


@schema.parametrize()
@settings(
    max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
def test_api_never_fails(case: Any) -> None:
    case.call_and_validate(checks=CHECKS)


# ----------------------------------------------------------------------------- the hostile grid

HOSTILE: list[Any] = [
    "\ud800",
    "a\udc00b",
    {"\udfff": 1},
    {"a": [{"b": "\ud800"}]},
    float("nan"),
    float("-inf"),
    2**70,
    -(2**70),
    -1e20,
    1e300,
    -1,
    0,
    1.5,
    True,
    None,
    "",
    "x" * 300,
    "2026-13-45",
    [],
    {},
    [[[[[[[[1]]]]]]]],
]

MESSAGES = [
    {"id": "m-1", "role": "user", "content": "hi", "createdAt": 1700000000000},
    {"role": "assistant", "content": [{"type": "text", "text": "yo"}], "createdAt": "2026-01-01T00:00:00Z"},
    {"role": "user", "content": {"format": 2, "parts": [{"type": "text", "text": "hey"}]}, "createdAt": 5},
]

# (method, path, a valid body): every route that takes a body, with every field it reads
BODIES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "POST",
        "/api/agents/echo/generate",
        {
            "messages": MESSAGES,
            "memory": {
                "thread": "t-fuzz",
                "resource": "u1",
                "options": {
                    "lastMessages": 5,
                    "semanticRecall": False,
                    "workingMemory": {"enabled": False, "scope": "thread", "template": None},
                    "readOnly": False,
                },
                "readOnly": False,
            },
            "requestContext": {"k": "v"},
            "maxSteps": 2,
            "maxProcessorRetries": 1,
            "toolChoice": "auto",
            "activeTools": ["add"],
            "modelSettings": {"temperature": 0.5},
            "providerOptions": {"openai": {"user": "x"}},
            "runId": "r-1",
            "tracingOptions": {"a": 1},
        },
    ),
    (
        "POST",
        "/api/agents/echo/stream",
        {
            "messages": MESSAGES[:2],
            "memory": {"thread": {"id": "t-fuzz"}, "resource": "u1", "options": {"lastMessages": 1}},
            "toolChoice": {"type": "tool", "toolName": "add"},
        },
    ),
    ("POST", "/api/agents/echo/generate", {"messages": "hi", "threadId": "t-fuzz", "resourceId": "u1"}),
    ("POST", "/api/tools/add/execute", {"data": {"a": 1, "b": 2}, "requestContext": {"k": "v"}}),
    ("POST", "/api/agents/echo/tools/add/execute", {"data": {"a": 1, "b": 2}}),
    (
        "POST",
        "/api/processors/block-word/execute",
        {"phase": "input", "messages": MESSAGES, "requestContext": {}},
    ),
    (
        "POST",
        "/api/memory/threads",
        {"resourceId": "u1", "threadId": "t-new", "title": "t", "metadata": {"a": 1}, "requestContext": {}},
    ),
    ("PATCH", "/api/memory/threads/t-fuzz", {"title": "t", "metadata": {"a": {"b": 1}}, "resourceId": "u1"}),
    (
        "POST",
        "/api/v1/responses",
        {
            "agent_id": "echo",
            "model": "echo",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
            "store": True,
            "conversation_id": "t-fuzz",
            "metadata": {"k": "v"},
            "text": {"format": {"type": "text"}},
            "temperature": 0.5,
            "top_p": 0.9,
            "max_output_tokens": 100,
            "requestContext": {"k": "v"},
        },
    ),
    (
        "POST",
        "/api/a2a/echo",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    "kind": "message",
                    "messageId": "m-1",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "hi"}],
                    "contextId": "t-fuzz",
                    "metadata": {"resourceId": "u1"},
                },
                "metadata": {"k": "v"},
            },
        },
    ),
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _with(body: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    target: Any = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(_app(), raise_server_exceptions=False) as client:
        made = client.post("/api/memory/threads", json={"resourceId": "u1", "threadId": "t-fuzz"})
        assert made.status_code == 200
        yield client


def test_no_field_of_any_body_turns_hostile_input_into_a_500(client: TestClient) -> None:
    failures: list[str] = []
    sent = 0
    for method, route, body in BODIES:
        valid = client.request(method, route, json=body)
        assert valid.status_code == 200, (route, valid.text)
        for path in _paths(body):
            for value in HOSTILE:
                raw = json.dumps(_with(body, path, value))  # surrogates escaped, NaN as NaN
                response = client.request(
                    method, route, content=raw, headers={"content-type": "application/json"}
                )
                sent += 1
                if response.status_code >= 500 and response.status_code not in (502, 504):
                    failures.append(f"{method} {route} {'.'.join(map(str, path))}={value!r}: {response.text}")
    assert sent > 1500
    assert not failures, f"{len(failures)} of {sent} requests failed:\n" + "\n".join(failures[:20])


# Routes that act on a run by id: (route, what suspends the run, a valid body). "RUN" and "CALL"
# stand for the run and its pending tool call; each request gets a run of its own, so the
# hostile value meets a run that is still waiting.
WIPE = '/tool wipe {"path": "/tmp/a"}'
ASK = '/tool ask {"question": "?"}'
DECISION_BODIES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "approve-tool-call",
        WIPE,
        {"runId": "RUN", "toolCallId": "CALL", "requestContext": {"k": "v"}, "format": "mastra"},
    ),
    ("approve-tool-call-generate", WIPE, {"runId": "RUN", "toolCallId": "CALL", "resourceId": "u1"}),
    ("decline-tool-call", WIPE, {"runId": "RUN", "toolCallId": "CALL", "reason": "no"}),
    ("decline-tool-call-generate", WIPE, {"runId": "RUN", "reason": "no", "requestContext": {}}),
    (
        "resume-stream",
        ASK,
        {
            "runId": "RUN",
            "toolCallId": "CALL",
            "resumeData": {"answer": "blue"},
            "memory": {"thread": "t-fuzz", "resource": "u1"},
            "maxSteps": 2,
            "modelSettings": {"temperature": 0.5},
            "requireToolApproval": False,
        },
    ),
    ("observe", "hello", {"runId": "RUN", "offset": 1, "resourceId": "u1"}),
]


def _placeholders(value: Any, run_id: str, call_id: str) -> Any:
    if value == "RUN":
        return run_id
    if value == "CALL":
        return call_id
    if isinstance(value, dict):
        return {k: _placeholders(v, run_id, call_id) for k, v in value.items()}
    return value


def _run_for(client: TestClient, text: str) -> tuple[str, str]:
    streamed = client.post(
        "/api/agents/echo/stream", json={"messages": text, "memory": {"thread": "t-fuzz", "resource": "u1"}}
    )
    last = json.loads(streamed.text.split("\n\n")[-3][len("data: ") :])
    return last["runId"], last["payload"].get("toolCallId", "")


def test_no_field_of_a_decision_body_turns_hostile_input_into_a_500(client: TestClient) -> None:
    failures: list[str] = []
    sent = 0
    for route, text, body in DECISION_BODIES:
        path = f"/api/agents/echo/{route}"
        valid = client.post(path, json=_placeholders(body, *_run_for(client, text)))
        assert valid.status_code == 200, (route, valid.text)
        for field in _paths(body):
            for value in HOSTILE:
                raw = json.dumps(_placeholders(_with(body, field, value), *_run_for(client, text)))
                response = client.post(path, content=raw, headers={"content-type": "application/json"})
                sent += 1
                if response.status_code >= 500 and response.status_code not in (502, 504):
                    failures.append(f"{route} {'.'.join(map(str, field))}={value!r}: {response.text}")
    assert sent > 400
    assert not failures, f"{len(failures)} of {sent} requests failed:\n" + "\n".join(failures[:20])
