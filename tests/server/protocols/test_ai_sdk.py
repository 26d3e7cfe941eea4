"""`POST /chat/{agentId}` over HTTP: the UI message stream's framing, the guard it shares with
`/stream` (redaction, tripwires, bearer auth, identity binding, body limits, plain JSON), the
chat id as the thread, decisions that are malformed or not the caller's, and a disconnect
cancelling the run. The AI SDK's own clients are in test_ai_sdk_clients.py / _page.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request
from tests.server.live import serve_in_thread
from tests.server.protocols.chat_app import EMAIL, build, wiped

from sluicegate.server import Identity, ServerSettings, create_app

WIPE = '/tool wipe {"path": "/tmp/x"}'
_ids = iter(range(1_000_000))


def user(text: str) -> dict[str, Any]:
    return {"id": f"u{next(_ids)}", "role": "user", "parts": [{"type": "text", "text": text}]}


def parts(body: str) -> list[dict[str, Any]]:
    lines = [line[6:] for line in body.split("\n") if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    registry, _ = build()
    with TestClient(create_app(registry, ServerSettings(max_body_bytes=50_000))) as test_client:
        yield test_client


def chat(client: TestClient, body: dict[str, Any], query: str = "", **kwargs: Any) -> httpx.Response:
    return client.post(f"/chat/echo{query}", json=body, **kwargs)


def test_the_answer_is_a_ui_message_stream(client: TestClient) -> None:
    answer = chat(client, {"id": "c-framing", "messages": [user("hi")], "trigger": "submit-message"})
    assert answer.status_code == 200
    assert answer.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert answer.headers["content-type"].startswith("text/event-stream")
    got = parts(answer.text)
    assert [p["type"] for p in got[:3]] == ["start", "start-step", "text-start"]
    assert {p["type"] for p in got[3:-3]} == {"text-delta"}
    assert [p["type"] for p in got[-3:]] == ["text-end", "finish-step", "finish"]
    assert "".join(p["delta"] for p in got if p["type"] == "text-delta") == "Echo: hi"


def test_an_email_split_across_deltas_never_leaves_in_any_part(client: TestClient) -> None:
    answer = chat(client, {"id": "c-pii", "messages": [user(f"mail {EMAIL} now")]})
    text = "".join(p["delta"] for p in parts(answer.text) if p["type"] == "text-delta")
    assert text == "Echo: mail [EMAIL] now"
    assert "lovelace" not in answer.text and "example.com" not in answer.text


def test_a_tripwire_is_a_data_part_then_finish(client: TestClient) -> None:
    got = parts(chat(client, {"messages": [user("forbidden words")]}).text)
    assert [p["type"] for p in got] == ["start", "data-tripwire", "finish"]
    assert got[1]["data"]["processorId"] == "block-word"
    assert got[2] == {"type": "finish", "finishReason": "other"}


def _approval(
    client: TestClient, chat_id: str, query: str = ""
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    ask = user(WIPE)
    got = parts(chat(client, {"id": chat_id, "messages": [ask]}, query).text)
    return got, ask


def test_ai_v5_gets_no_approval_part_it_would_refuse(client: TestClient) -> None:
    got, _ = _approval(client, "c-v5", "?version=v5")
    types = [p["type"] for p in got]
    assert "tool-approval-request" not in types and "data-tool-call-approval" in types
    assert got[-1] == {"type": "finish", "finishReason": "tool-calls"}
    got, _ = _approval(client, "c-v7", "?version=v7")
    assert "tool-approval-request" in [p["type"] for p in got]


def _responded(part: dict[str, Any], message_id: str, **approval: Any) -> dict[str, Any]:
    tool_part = {"type": "tool-wipe", "toolCallId": part["toolCallId"], "state": "approval-responded"}
    return {"id": message_id, "role": "assistant", "parts": [{**tool_part, "approval": approval}]}


@pytest.mark.parametrize(
    ("approval", "field"),
    [
        ({"id": "no-separator", "approved": True}, "not one this server sent"),
        ({"id": "{run}", "approved": "yes"}, "approval {id, approved}"),
    ],
)
def test_a_malformed_approval_is_refused_never_run_as_a_new_turn(
    client: TestClient, approval: dict[str, Any], field: str
) -> None:
    got, ask = _approval(client, "c-malformed")
    request = next(p for p in got if p["type"] == "tool-approval-request")
    approval = {**approval, "id": approval["id"].replace("{run}", request["approvalId"])}
    answer = chat(client, {"id": "c-malformed", "messages": [ask, _responded(request, "m1", **approval)]})
    assert answer.status_code == 400
    assert field in answer.json()["error"]


def test_an_approval_for_an_unknown_run_is_404(client: TestClient) -> None:
    got, ask = _approval(client, "c-unknown")
    request = next(p for p in got if p["type"] == "tool-approval-request")
    forged = f"not-a-run::{request['toolCallId']}"
    answer = chat(client, {"messages": [ask, _responded(request, "m1", id=forged, approved=True)]})
    assert answer.status_code == 404


def test_an_explicit_decision_needs_the_run_and_an_approval_shape(client: TestClient) -> None:
    answer = chat(client, {"messages": [user("x")], "resumeData": {"approved": True}})
    assert answer.status_code == 400 and answer.json()["field"] == "runId"
    answer = chat(client, {"messages": [user("x")], "runId": "r", "resumeData": {"approved": 1}})
    assert answer.status_code == 400 and answer.json()["field"] == "resumeData"


def test_unknown_fields_non_json_values_and_big_bodies_are_refused(client: TestClient) -> None:
    answer = chat(client, {"messages": [user("x")], "temperature": 2})
    assert answer.status_code == 400 and answer.json()["field"] == "temperature"
    lone = '{"messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "\\ud800"}]}]}'
    answer = client.post("/chat/echo", content=lone, headers={"content-type": "application/json"})
    assert answer.status_code == 400
    assert chat(client, {"messages": [user("x" * 60_000)]}).status_code == 413
    assert chat(client, {"messages": []}).status_code in (400, 422)


def test_the_chat_id_is_the_thread_and_only_the_new_turn_goes_in(client: TestClient) -> None:
    first = user("first turn")
    answer = parts(chat(client, {"id": "c-thread", "messages": [first]}).text)
    reply = {
        "id": answer[0]["messageId"],
        "role": "assistant",
        "parts": [{"type": "text", "text": "Echo: first turn"}],
    }
    chat(client, {"id": "c-thread", "messages": [first, reply, user("second turn")]})
    stored = client.get(
        "/api/memory/threads/c-thread/messages", params={"agentId": "echo", "resourceId": "c-thread"}
    )
    assert stored.status_code == 200, stored.text
    texts = [m["content"]["content"] for m in stored.json()["messages"]]
    assert texts.count("first turn") == 1  # the resent history is not stored twice
    assert texts[-2:] == ["second turn", "Echo: second turn"]


def test_memory_names_another_thread(client: TestClient) -> None:
    body = {
        "id": "c-ignored",
        "messages": [user("elsewhere")],
        "memory": {"thread": "t-named", "resource": "ada"},
    }
    chat(client, body)
    stored = client.get(
        "/api/memory/threads/t-named/messages", params={"agentId": "echo", "resourceId": "ada"}
    )
    assert [m["content"]["content"] for m in stored.json()["messages"]] == ["elsewhere", "Echo: elsewhere"]
    missing = client.get(
        "/api/memory/threads/c-ignored/messages", params={"agentId": "echo", "resourceId": "c-ignored"}
    )
    assert missing.status_code == 404


def test_bearer_auth_covers_the_chat_route() -> None:
    registry, _ = build()
    with TestClient(create_app(registry, ServerSettings(api_token="secret"))) as locked:
        assert chat(locked, {"messages": [user("hi")]}).status_code == 401
        answer = chat(locked, {"messages": [user("hi")]}, headers={"authorization": "Bearer secret"})
        assert answer.status_code == 200


def _users(request: Request) -> Identity | None:
    name = request.headers.get("x-user")
    return Identity(resource_id=name) if name else None


def test_the_identity_binds_the_thread_and_the_decisions() -> None:
    registry, _ = build(resolve_identity=_users)
    with TestClient(create_app(registry, ServerSettings())) as hooked:
        assert chat(hooked, {"messages": [user("hi")]}).status_code == 401
        other = {"messages": [user("hi")], "memory": {"thread": "t-x", "resource": "bob"}}
        assert chat(hooked, other, headers={"x-user": "alice"}).status_code == 403
        ask = user(WIPE)
        got = parts(chat(hooked, {"id": "c-alice", "messages": [ask]}, headers={"x-user": "alice"}).text)
        request = next(p for p in got if p["type"] == "tool-approval-request")
        approve = {"messages": [ask, _responded(request, "m1", id=request["approvalId"], approved=True)]}
        wiped.clear()
        assert chat(hooked, approve, headers={"x-user": "bob"}).status_code == 404  # not bob's run
        assert wiped == []
        assert chat(hooked, approve, headers={"x-user": "alice"}).status_code == 200
        assert wiped == ["/tmp/x"]


def test_a_client_that_disconnects_cancels_the_run() -> None:
    registry, slow = build()
    with serve_in_thread(create_app(registry, ServerSettings())) as url, httpx.Client(timeout=10) as http:
        with http.stream("POST", f"{url}/chat/slow", json={"messages": [user("tick")]}) as answer:
            for line in answer.iter_lines():
                if '"text-delta"' in line:
                    break  # leave mid-answer: the model would go on for a minute
        assert slow.cancelled.wait(10)


def test_a_tool_that_suspended_itself_resumes_with_its_data(client: TestClient) -> None:
    ask = user('/tool ask {"question": "your name?"}')
    got = parts(chat(client, {"id": "c-ask", "messages": [ask]}).text)
    suspended = next(p for p in got if p["type"] == "data-tool-call-suspended")["data"]
    assert suspended["suspendPayload"] == {"question": "your name?"}
    reply = {"id": got[0]["messageId"], "role": "assistant", "parts": [{"type": "step-start"}]}
    resume = {
        "runId": suspended["runId"],
        "toolCallId": suspended["toolCallId"],
        "resumeData": {"answer": "Ada"},
    }
    answer = chat(client, {"id": "c-ask", "messages": [ask, reply], **resume})
    assert answer.status_code == 200, answer.text
    rest = parts(answer.text)
    assert rest[0] == {"type": "start", "messageId": got[0]["messageId"]}
    assert 'Tool ask said: {"answer": "Ada"}' in "".join(
        p["delta"] for p in rest if p["type"] == "text-delta"
    )
    again = chat(client, {"id": "c-ask", "messages": [ask, reply], **resume})
    assert again.status_code == 404  # decided once: no longer waiting


def test_regenerate_answers_the_last_turn_again(client: TestClient) -> None:
    first = user("say it twice")
    answer = parts(chat(client, {"id": "c-regen", "messages": [first]}).text)
    reply = {"id": answer[0]["messageId"], "role": "assistant", "parts": [{"type": "text", "text": "x"}]}
    body = {
        "id": "c-regen",
        "messages": [first, reply],
        "trigger": "regenerate-message",
        "messageId": reply["id"],
    }
    again = parts(chat(client, body).text)
    assert "".join(p["delta"] for p in again if p["type"] == "text-delta") == "Echo: say it twice"
