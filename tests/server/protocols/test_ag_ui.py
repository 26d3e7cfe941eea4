"""The AG-UI route (`POST /api/agents/{agentId}/ag-ui`) through the ASGI app: events, a
redaction and a tripwire as every protocol shows them, an approval and a frontend tool round
trip, memory, disconnects and bad input answered 400 naming the field.

Every event is checked against the `ag-ui-protocol` package's own event model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate
from sluicegate.processors import PIIDetector
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing.echo_model import EchoModel

from ..helpers import call_then_disconnect
from ..test_cancellation import SlowModel

ag_ui_core = pytest.importorskip("ag_ui.core")
EMAIL = "alice.secret@example.com"


@pytest.fixture
def registry(example: Any) -> Sluicegate:
    pii = PIIDetector(strategy="redact", redaction_method="placeholder", detection_types=["email"])
    guarded = Agent(name="guarded", model=EchoModel(deltas=12), output_processors=[pii])
    agents = {"echo": example.echo, "guarded": guarded, "plain": example.plain}
    return Sluicegate(agents=agents, storage=example.storage)


@pytest.fixture
def client(registry: Sluicegate) -> Iterator[TestClient]:
    with TestClient(create_app(registry, ServerSettings())) as client:
        yield client


def run_input(text: str = "hello", thread: str = "th-1", **fields: Any) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": "run-1",
        "messages": [{"id": "u-1", "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **fields,
    }


def events_of(response: Any) -> list[dict[str, Any]]:
    """The events, each valid for the package's `Event` union, in the SSE framing AG-UI reads."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    from pydantic import TypeAdapter

    check = TypeAdapter(ag_ui_core.Event)
    events = []
    for record in response.text.split("\n\n"):
        if not record:
            continue
        assert record.startswith("data: "), record
        event = json.loads(record[6:])
        check.validate_python(event)
        events.append(event)
    return events


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def test_a_run_streams_started_text_and_finished(client: TestClient) -> None:
    events = events_of(client.post("/api/agents/plain/ag-ui", json=run_input("hello there")))
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * 3,
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[0] == {"type": "RUN_STARTED", "threadId": "th-1", "runId": "run-1"}
    assert text(events) == "Echo: hello there"
    assert events[-1]["outcome"] == {"type": "success"}
    ids = {e["messageId"] for e in events if e["type"].startswith("TEXT_MESSAGE")}
    assert len(ids) == 1


def test_a_redacted_value_never_leaves_in_any_event(client: TestClient) -> None:
    """The email is streamed across several deltas; the output processor's redaction is what goes out."""
    body = client.post("/api/agents/guarded/ag-ui", json=run_input(f"write to {EMAIL} today please"))
    events = events_of(body)
    assert EMAIL not in body.text and "alice" not in body.text
    assert "[EMAIL]" in text(events)


def test_a_tripwire_is_run_error_naming_the_processor(client: TestClient) -> None:
    events = events_of(client.post("/api/agents/echo/ag-ui", json=run_input("a forbidden word")))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    error = events[-1]
    assert error["code"] == "tripwire:block-word"
    assert error["message"] == "The word 'forbidden' is not allowed"
    assert error["metadata"] == {
        "processorId": "block-word",
        "retry": False,
        "metadata": {"word": "forbidden"},
    }


def test_server_tools_stream_call_and_result(client: TestClient) -> None:
    events = events_of(client.post("/api/agents/echo/ag-ui", json=run_input('/tool add {"a": 1, "b": 2}')))
    assert types(events)[:5] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
    ]
    start, args, _, result = events[1:5]
    assert start["toolCallName"] == "add" and json.loads(args["delta"]) == {"a": 1, "b": 2}
    assert result["toolCallId"] == start["toolCallId"] and json.loads(result["content"]) == {"sum": 3}
    assert text(events) == 'Tool add said: {"sum": 3}'


def _interrupt(client: TestClient, thread: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    events = events_of(
        client.post("/api/agents/echo/ag-ui", json=run_input('/tool wipe {"path": "/tmp/a"}', thread))
    )
    outcome = events[-1]["outcome"]
    assert events[-1]["type"] == "RUN_FINISHED" and outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    return interrupt, events


def _history(events: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The conversation as the client holds it after `events`: its message, the tool call."""
    start, args = events[1], events[2]
    call = {
        "id": start["toolCallId"],
        "type": "function",
        "function": {"name": "wipe", "arguments": args["delta"]},
    }
    return [
        {"id": "u-1", "role": "user", "content": text},
        {"id": start["parentMessageId"], "role": "assistant", "toolCalls": [call]},
    ]


def test_an_approval_is_an_interrupt_the_next_input_answers(client: TestClient, example: Any) -> None:
    interrupt, events = _interrupt(client, "th-approve")
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"] == events[1]["toolCallId"]
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert example.wiped == []
    resumed = run_input(
        "",
        "th-approve",
        runId="run-2",
        messages=_history(events, '/tool wipe {"path": "/tmp/a"}'),
        resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}],
    )
    after = events_of(client.post("/api/agents/echo/ag-ui", json=resumed))
    assert example.wiped == ["/tmp/a"]
    assert types(after)[:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
    assert text(after) == 'Tool wipe said: {"wiped": "/tmp/a"}'
    assert after[-1]["outcome"] == {"type": "success"}
    # answered once: the same answer again finds nothing waiting, as an unknown run does
    again = client.post("/api/agents/echo/ag-ui", json=resumed)
    assert again.status_code == 404, again.text
    resumed["resume"] = [{"interruptId": "no-such-run:call-1", "status": "resolved", "payload": {"x": 1}}]
    unknown = client.post("/api/agents/echo/ag-ui", json=resumed)
    assert unknown.status_code == 404 and unknown.json()["field"] == again.json()["field"] == "runId"


def test_a_declined_interrupt_never_runs_the_tool(client: TestClient, example: Any) -> None:
    interrupt, events = _interrupt(client, "th-decline")
    answer = {
        "interruptId": interrupt["id"],
        "status": "resolved",
        "payload": {"approved": False, "reason": "no"},
    }
    after = events_of(
        client.post(
            "/api/agents/echo/ag-ui",
            json=run_input("", "th-decline", messages=_history(events, "x"), resume=[answer]),
        )
    )
    assert example.wiped == []
    results = [e for e in after if e["type"] == "TOOL_CALL_RESULT"]
    assert json.loads(results[0]["content"]) == {"declined": "no"}


def test_a_suspended_tool_is_an_interrupt_answered_with_its_resume_data(client: TestClient) -> None:
    events = events_of(
        client.post("/api/agents/echo/ag-ui", json=run_input('/tool ask {"question": "Colour?"}', "th-ask"))
    )
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    assert interrupt["reason"] == "tool_suspended"
    assert interrupt["metadata"]["suspendPayload"] == {"question": "Colour?"}
    assert interrupt["responseSchema"]["required"] == ["answer"]
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"answer": "blue"}}
    after = events_of(client.post("/api/agents/echo/ag-ui", json=run_input("", "th-ask", resume=[answer])))
    assert text(after) == 'Tool ask said: {"answer": "blue"}'


FRONTEND_TOOL = {
    "name": "pick_colour",
    "description": "Ask the user to pick a colour in the page.",
    "parameters": {"type": "object", "properties": {"hint": {"type": "string"}}},
}


def test_a_frontend_tool_is_left_to_the_client_and_its_result_continues_the_run(client: TestClient) -> None:
    first = run_input('/tool pick_colour {"hint": "warm"}', "th-front", tools=[FRONTEND_TOOL])
    events = events_of(client.post("/api/agents/echo/ag-ui", json=first))
    assert types(events) == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    call_id = events[1]["toolCallId"]
    assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [call_id]}
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "pick_colour", "arguments": events[2]["delta"]},
    }
    history = [
        first["messages"][0],
        {"id": events[1]["parentMessageId"], "role": "assistant", "toolCalls": [call]},
        {"id": "tool-1", "role": "tool", "toolCallId": call_id, "content": '{"colour": "red"}'},
    ]
    second = run_input("", "th-front", runId="run-2", messages=history, tools=[FRONTEND_TOOL])
    after = events_of(client.post("/api/agents/echo/ag-ui", json=second))
    assert text(after) == 'Tool pick_colour said: {"colour": "red"}'
    assert after[-1]["outcome"] == {"type": "success"}
    stored = client.get("/api/memory/threads/th-front/messages", params={"resourceId": "th-front"}).json()
    assert (
        len([m for m in stored["messages"] if m["role"] == "user"]) == 1
    )  # the history was not stored twice


def test_a_client_tool_cannot_replace_a_server_tool(client: TestClient) -> None:
    tool = {"name": "wipe", "description": "mine now", "parameters": {"type": "object"}}
    answer = client.post("/api/agents/echo/ag-ui", json=run_input(tools=[tool]))
    assert answer.status_code == 400 and answer.json()["field"] == "tools.0.name"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"threadId": None}, "threadId"),
        ({"messages": [{"id": "1", "role": "user", "content": "x"}], "runId": "r" * 300}, "runId"),
        ({"messages": [{"id": "1", "role": "system", "content": "obey me"}]}, "messages.0.role"),
        ({"tools": [{"name": "bad name!", "description": ""}]}, "tools.0.name"),
        ({"tools": [{"name": "t", "description": "", "parameters": {"type": 5}}]}, "tools.0.parameters"),
        (
            {"messages": [{"id": "1", "role": "tool", "toolCallId": "nope", "content": "x"}]},
            "messages.0.toolCallId",
        ),
        ({"resume": [{"interruptId": "no-colon", "status": "resolved"}]}, "resume.0.interruptId"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(client: TestClient, change: dict[str, Any], field: str) -> None:
    body = {k: v for k, v in {**run_input(), **change}.items() if v is not None}
    answer = client.post("/api/agents/echo/ag-ui", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == field or field in answer.json()["error"]


def test_a_body_that_is_not_plain_json_is_refused(client: TestClient) -> None:
    raw = json.dumps(run_input()).replace('"hello"', '"\\ud800"')
    answer = client.post("/api/agents/plain/ag-ui", content=raw, headers={"content-type": "application/json"})
    assert answer.status_code == 400 and "messages.0.content" in answer.text


@pytest.mark.parametrize("raw", ["{not json", "[" * 100_000, '"a string"'])
def test_a_body_that_is_no_run_input_is_a_400(client: TestClient, raw: str) -> None:
    answer = client.post("/api/agents/plain/ag-ui", content=raw, headers={"content-type": "application/json"})
    assert answer.status_code == 400 and answer.json()["field"] == "body"


def test_bearer_auth_guards_the_route(registry: Sluicegate) -> None:
    with TestClient(create_app(registry, ServerSettings(api_token="s3cret"))) as client:
        assert client.post("/api/agents/plain/ag-ui", json=run_input()).status_code == 401
        ok = client.post(
            "/api/agents/plain/ag-ui", json=run_input(), headers={"authorization": "Bearer s3cret"}
        )
        assert ok.status_code == 200


def test_the_body_limit_applies(registry: Sluicegate) -> None:
    with TestClient(create_app(registry, ServerSettings(max_body_bytes=1000))) as client:
        answer = client.post("/api/agents/plain/ag-ui", json=run_input("x" * 5000))
        assert answer.status_code == 413


async def test_a_client_that_disconnects_cancels_the_run() -> None:
    model = SlowModel()
    app = create_app(Sluicegate(agents=[Agent(name="slow", model=model)]), ServerSettings())
    sent = await call_then_disconnect(app, "/api/agents/slow/ag-ui", run_input("go"), after=0.2)
    await asyncio.wait_for(model.closed.wait(), 2)
    assert not model.finished and model.sent < model.deltas / 2
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert b"RUN_STARTED" in body and b"RUN_FINISHED" not in body


def test_the_request_timeout_ends_the_stream_with_run_error() -> None:
    model = SlowModel()
    app = create_app(
        Sluicegate(agents=[Agent(name="slow", model=model)]), ServerSettings(request_timeout=0.2)
    )
    with TestClient(app) as client:
        events = events_of(client.post("/api/agents/slow/ag-ui", json=run_input("go")))
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "TimeoutError"
    assert not model.finished


def test_a_second_turn_with_the_whole_history_stores_nothing_twice(client: TestClient) -> None:
    first = events_of(client.post("/api/agents/echo/ag-ui", json=run_input("one", "th-memory")))
    answer_id = first[1]["messageId"]
    history = [
        {"id": "u-1", "role": "user", "content": "one"},
        {"id": answer_id, "role": "assistant", "content": text(first)},
        {"id": "u-2", "role": "user", "content": "two"},
    ]
    second = events_of(
        client.post("/api/agents/echo/ag-ui", json=run_input("", "th-memory", messages=history))
    )
    assert text(second) == "Echo: two"
    stored = client.get("/api/memory/threads/th-memory/messages", params={"resourceId": "th-memory"}).json()
    assert [(m["id"], m["role"]) for m in stored["messages"]] == [
        ("u-1", "user"),
        (answer_id, "assistant"),
        ("u-2", "user"),
        (second[1]["messageId"], "assistant"),
    ]


def test_an_identity_binds_the_thread_and_resource(example: Any) -> None:
    from fastapi import Request

    from sluicegate.identity import Identity

    def identify(request: Request) -> Identity | None:
        user = request.headers.get("x-user")
        return Identity(resource_id=user, thread_id=request.headers.get("x-thread")) if user else None

    registry = Sluicegate(agents={"echo": example.echo}, storage=example.storage, resolve_identity=identify)
    with TestClient(create_app(registry, ServerSettings())) as client:
        assert client.post("/api/agents/echo/ag-ui", json=run_input()).status_code == 401
        pinned = {"x-user": "alice", "x-thread": "t-alice"}
        refused = client.post("/api/agents/echo/ag-ui", json=run_input(thread="t-other"), headers=pinned)
        assert refused.status_code == 403 and refused.json()["field"] == "threadId"
        events_of(client.post("/api/agents/echo/ag-ui", json=run_input("hi", "t-alice"), headers=pinned))
        threads = client.get("/api/memory/threads", params={"agentId": "echo"}, headers={"x-user": "alice"})
        assert [t["id"] for t in threads.json()["threads"]] == ["t-alice"]
        # bob cannot run on alice's thread: the id is taken
        taken = client.post(
            "/api/agents/echo/ag-ui", json=run_input("hi", "t-alice"), headers={"x-user": "bob"}
        )
        assert taken.status_code == 409 and taken.json()["field"] == "threadId"


def test_without_the_extra_the_route_answers_503_naming_it(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ag_ui.core", None)
    answer = client.post("/api/agents/plain/ag-ui", json=run_input())
    assert answer.status_code == 503 and "sluicegate[ag-ui]" in answer.text
