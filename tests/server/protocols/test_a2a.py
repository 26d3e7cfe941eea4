"""A2A (`/api/a2a/{agentId}`) driven by the `a2a-sdk` client against a served app: the client
reads the agent card, picks the 0.3 JSON-RPC transport and sends, streams, gets and cancels."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.compat.v0_3 import types as v03
from a2a.helpers.proto_helpers import get_artifact_text, get_message_text, new_text_message
from a2a.types import a2a_pb2 as pb
from fastapi.testclient import TestClient
from tests.server import example_app  # `example_app.wiped` read when asserted: other tests reload the module
from tests.server.helpers import call_then_disconnect
from tests.server.live import serve_in_thread
from tests.server.protocols.protocol_app import EMAIL, MODEL_PIECES, RAW, build, user_header

from sluicegate.server import ServerSettings, create_app

TOKEN = "a2a-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    registry, _ = build()
    with serve_in_thread(create_app(registry, ServerSettings(api_token=TOKEN))) as served:
        yield served


@asynccontextmanager
async def _client(url: str, agent: str = "echo", *, streaming: bool = True) -> AsyncIterator[Any]:
    """The A2A SDK's client for `agent`, made from its card (bearer token sent)."""
    http = httpx.AsyncClient(headers=AUTH, timeout=10)
    try:
        config = ClientConfig(streaming=streaming, httpx_client=http)
        yield await create_client(
            f"{url}/api", config, relative_card_path=f"/.well-known/{agent}/agent-card.json"
        )
    finally:
        await http.aclose()


async def _send(url: str, text: str, *, streaming: bool = True, task_id: str | None = None) -> list[Any]:
    async with _client(url, streaming=streaming) as client:
        message = new_text_message(text, role=pb.Role.ROLE_USER, task_id=task_id)
        return [event async for event in client.send_message(pb.SendMessageRequest(message=message))]


def _task(events: list[Any]) -> Any:
    return next(e.task for e in reversed(events) if e.HasField("task"))


def _state(events: list[Any]) -> int:
    updates = [e.status_update for e in events if e.HasField("status_update")]
    return updates[-1].status.state if updates else _task(events).status.state


def test_the_agent_card(url: str) -> None:
    card = httpx.get(f"{url}/api/.well-known/echo/agent-card.json", headers=AUTH).json()
    v03.AgentCard.model_validate(card)
    assert card["url"] == f"{url}/api/a2a/echo"
    assert card["capabilities"]["streaming"] is True
    assert {s["id"] for s in card["skills"]} == {"add", "wipe", "ask"}
    assert card["security"] == [{"bearer": []}]
    assert "You repeat the user" not in json.dumps(card)  # the instructions stay private
    assert httpx.get(f"{url}/api/.well-known/echo/agent-card.json").status_code == 401


def test_send_and_stream_with_the_a2a_client(url: str) -> None:
    streamed = asyncio.run(_send(url, "hello over a2a"))
    assert _state(streamed) == pb.TASK_STATE_COMPLETED
    pieces = [
        get_artifact_text(e.artifact_update.artifact) for e in streamed if e.HasField("artifact_update")
    ]
    assert len(pieces) > 1 and "".join(pieces) == "Echo: hello over a2a"
    sent = asyncio.run(_send(url, "not streamed", streaming=False))
    task = _task(sent)
    assert task.status.state == pb.TASK_STATE_COMPLETED
    assert get_artifact_text(task.artifacts[0]) == "Echo: not streamed"

    async def fetched() -> Any:
        async with _client(url) as client:
            return await client.get_task(pb.GetTaskRequest(id=task.id))

    assert asyncio.run(fetched()).status.state == pb.TASK_STATE_COMPLETED


def test_a_redacted_value_never_leaves_in_any_event(url: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/stream",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m",
                "role": "user",
                "parts": [{"kind": "text", "text": EMAIL}],
            }
        },
    }
    raw = httpx.post(f"{url}/api/a2a/echo", json=body, headers=AUTH)
    events = [json.loads(r[6:]) for r in raw.text.split("\n\n") if r.startswith("data: ")]
    task_id = events[0]["result"]["id"]
    streamed = raw.text.replace(EMAIL, "", 1)  # the user's own message, echoed in the task's history
    assert RAW.search(streamed) is None
    pieces = [
        e["result"]["artifact"]["parts"][0]["text"]
        for e in events
        if e["result"]["kind"] == "artifact-update"
    ]
    assert len(MODEL_PIECES) > 10  # the model answers one character a chunk: the address comes split
    assert "".join(pieces).startswith("Echo: ") and RAW.search("".join(pieces)) is None
    got = httpx.post(
        f"{url}/api/a2a/echo",
        json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task_id}},
        headers=AUTH,
    ).json()["result"]
    assert RAW.search(json.dumps(got["artifacts"])) is None and RAW.search(json.dumps(got["status"])) is None
    for event in events[1:]:
        kind = event["result"]["kind"]
        model = v03.TaskArtifactUpdateEvent if kind == "artifact-update" else v03.TaskStatusUpdateEvent
        model.model_validate(event["result"])


def test_a_tripwire_rejects_the_task_naming_the_processor(url: str) -> None:
    events = asyncio.run(_send(url, "this is forbidden"))
    assert _state(events) == pb.TASK_STATE_REJECTED
    final = [e.status_update for e in events if e.HasField("status_update")][-1]
    assert get_message_text(final.status.message) == "The word 'forbidden' is not allowed"
    tripwire = final.status.message.metadata["tripwire"]
    assert tripwire["processorId"] == "block-word"


def test_an_approval_round_trip(url: str) -> None:
    asked = asyncio.run(_send(url, '/tool wipe {"path": "/tmp/a2a-approved"}'))
    assert _state(asked) == pb.TASK_STATE_INPUT_REQUIRED
    task_id = _task(asked).id
    with pytest.raises(Exception, match="approve"):  # an unclear answer approves nothing
        asyncio.run(_send(url, "maybe later", task_id=task_id))
    assert "/tmp/a2a-approved" not in example_app.wiped
    answered = asyncio.run(_send(url, "approve", task_id=task_id))
    assert _state(answered) == pb.TASK_STATE_COMPLETED
    assert "/tmp/a2a-approved" in example_app.wiped
    texts = [get_artifact_text(e.artifact_update.artifact) for e in answered if e.HasField("artifact_update")]
    assert "".join(texts) == 'Tool wipe said: {"wiped": "/tmp/a2a-approved"}'


def test_a_declined_call_never_runs_and_cancel_ends_a_waiting_task(url: str) -> None:
    asked = asyncio.run(_send(url, '/tool wipe {"path": "/tmp/a2a-declined"}'))
    declined = asyncio.run(_send(url, "decline", task_id=_task(asked).id))
    assert _state(declined) == pb.TASK_STATE_COMPLETED
    assert "/tmp/a2a-declined" not in example_app.wiped
    waiting = asyncio.run(_send(url, '/tool wipe {"path": "/tmp/a2a-canceled"}'))

    async def cancel() -> Any:
        async with _client(url) as client:
            return await client.cancel_task(pb.CancelTaskRequest(id=_task(waiting).id))

    assert asyncio.run(cancel()).status.state == pb.TASK_STATE_CANCELED
    with pytest.raises(Exception, match="canceled"):
        asyncio.run(_send(url, "approve", task_id=_task(waiting).id))
    assert "/tmp/a2a-canceled" not in example_app.wiped


def test_json_rpc_errors_name_what_was_wrong(url: str) -> None:
    def call(body: Any) -> dict[str, Any]:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        answer = httpx.post(
            f"{url}/api/a2a/echo", content=content, headers={**AUTH, "content-type": "application/json"}
        )
        assert answer.status_code == 200
        return answer.json()["error"]

    assert call(b"{nope")["code"] == -32700
    assert call({"id": 1, "method": "message/send"})["code"] == -32600
    assert call({"jsonrpc": "2.0", "id": 1, "method": "tasks/list"})["code"] == -32601
    missing = call({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}})
    assert missing["code"] == -32602 and "params.message" in missing["message"]
    surrogate = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "\ud800"}}
    assert call(surrogate)["data"]["field"] == "params.id"
    assert (
        call({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "nope"}})["code"] == -32001
    )


def test_tasks_belong_to_their_caller() -> None:
    registry, _ = build(identity=user_header)
    with TestClient(create_app(registry, ServerSettings())) as client:
        message = {
            "kind": "message",
            "messageId": "m",
            "role": "user",
            "parts": [{"kind": "text", "text": "mine"}],
        }
        send = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
        task = client.post("/api/a2a/echo", json=send, headers={"x-user": "ann"}).json()["result"]
        get = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task["id"]}}
        assert (
            client.post("/api/a2a/echo", json=get, headers={"x-user": "bob"}).json()["error"]["code"]
            == -32001
        )
        assert (
            client.post("/api/a2a/echo", json=get, headers={"x-user": "ann"}).json()["result"]["id"]
            == task["id"]
        )
        joined = {**message, "contextId": task["contextId"]}  # another resource's conversation
        taken = {"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": joined}}
        assert "error" in client.post("/api/a2a/echo", json=taken, headers={"x-user": "bob"}).json()


@pytest.mark.parametrize("method", ["message/stream", "message/send"])
async def test_a_client_that_disconnects_cancels_the_run(method: str) -> None:
    registry, slow = build()
    app = create_app(registry, ServerSettings())
    message = {"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "go"}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}
    await call_then_disconnect(app, "/api/a2a/slow", body, after=0.2)
    await asyncio.wait_for(slow.closed.wait(), 2)
    assert not slow.finished
    assert slow.sent < slow.deltas / 2


async def test_tasks_cancel_stops_a_running_task() -> None:
    registry, slow = build()
    app = create_app(registry, ServerSettings())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2a") as http:
        message = {
            "kind": "message",
            "messageId": "m",
            "role": "user",
            "parts": [{"kind": "text", "text": "go"}],
        }
        send = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
        running = asyncio.ensure_future(http.post("/api/a2a/slow", json=send))
        while not slow.sent:  # noqa: ASYNC110 (SlowModel counts its deltas; it sets no event on the first)
            await asyncio.sleep(0.01)
        (task_id,) = app.state.a2a_tasks.ids()
        cancel = {"jsonrpc": "2.0", "id": 2, "method": "tasks/cancel", "params": {"id": task_id}}
        await http.post("/api/a2a/slow", json=cancel)
        answer = (await asyncio.wait_for(running, 5)).json()["result"]
    assert answer["status"]["state"] == "canceled"
    assert not slow.finished


def test_the_body_limit_applies() -> None:
    registry, _ = build()
    with TestClient(create_app(registry, ServerSettings(max_body_bytes=2000))) as client:
        message = {
            "kind": "message",
            "messageId": "m",
            "role": "user",
            "parts": [{"kind": "text", "text": "x" * 5000}],
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
        assert client.post("/api/a2a/echo", json=body).status_code == 413


def test_a_stream_past_the_request_timeout_ends_with_a_json_rpc_error() -> None:
    registry, slow = build()
    app = create_app(registry, ServerSettings(request_timeout=0.3))
    message = {"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "go"}]}
    body = {"jsonrpc": "2.0", "id": 7, "method": "message/stream", "params": {"message": message}}
    with TestClient(app) as client:
        answer = client.post("/api/a2a/slow", json=body)
        events = [json.loads(r[6:]) for r in answer.text.split("\n\n") if r.startswith("data: ")]
        assert events[-1]["id"] == 7 and "0.3 s" in events[-1]["error"]["message"]
        get = {"jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": {"id": events[0]["result"]["id"]}}
        assert client.post("/api/a2a/slow", json=get).json()["result"]["status"]["state"] == "canceled"
    assert not slow.finished
