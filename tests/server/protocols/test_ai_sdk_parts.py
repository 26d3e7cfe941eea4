"""`UIMessageStream`: the parts each chunk becomes, and the edges of a stream (nothing but a
failure, an empty run, a provider's error text, a tool's own data parts, a timeout)."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from tests.server.protocols.chat_app import build

from sluicegate.errors import APICallError
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.protocols.ai_sdk.ui_stream import UIMessageStream
from sluicegate.stream.chunk import Chunk, TextPayload
from sluicegate.stream.payload import Payload


def decoded(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in data.decode().split("\n") if line.startswith("data: ")]


def test_a_stream_that_fails_before_anything_starts_then_errors() -> None:
    encoder = UIMessageStream("v6")
    assert decoded(encoder.error("boom", "Error")) == [
        {"type": "start"},
        {"type": "error", "errorText": "boom"},
    ]
    assert encoder.end() == b""  # no finish after an error


def test_an_empty_run_still_starts_and_finishes() -> None:
    encoder = UIMessageStream("v6", message_id="a1")
    assert decoded(encoder.end()) == [
        {"type": "start", "messageId": "a1"},
        {"type": "finish", "finishReason": "other"},
    ]


def test_a_provider_error_shows_its_public_summary_only() -> None:
    secret = APICallError(
        "upstream said: key sk-live-123 is revoked", status_code=401, response_body="sk-live-123"
    )
    encoder = UIMessageStream("v6")
    encoder.chunk(Chunk("start", "r1", Payload(message_id="m1")))
    got = decoded(encoder.chunk(Chunk("error", "r1", Payload(error=secret))))
    assert got[0]["type"] == "error"
    assert "sk-live" not in got[0]["errorText"]
    shown = decoded(
        UIMessageStream("v6", error_details=True).chunk(Chunk("error", "r1", Payload(error=secret)))
    )
    assert "revoked" in shown[-1]["errorText"]


def test_a_tools_data_parts_pass_through_and_mastras_own_kinds_do_not() -> None:
    encoder = UIMessageStream("v6")
    encoder.chunk(Chunk("start", "r1", Payload(message_id="m1")))
    custom = Chunk("data-progress", "r1", data={"done": 3})
    custom.transient = True
    assert decoded(encoder.chunk(custom)) == [
        {"type": "data-progress", "data": {"done": 3}, "transient": True}
    ]
    assert encoder.chunk(Chunk("warning", "r1", Payload(message="ignored"))) == b""
    assert encoder.chunk(Chunk("raw", "r1", Payload(raw_value={}))) == b""
    delta = decoded(encoder.chunk(Chunk("reasoning-delta", "r1", TextPayload("r", "thinking"))))
    assert delta == [{"type": "reasoning-delta", "id": "r", "delta": "thinking"}]


def test_tool_input_streams_and_a_suspended_tool_is_a_data_part() -> None:
    encoder = UIMessageStream("v5")
    encoder.chunk(Chunk("start", "r1", Payload(message_id="m1")))
    started = Chunk("tool-call-input-streaming-start", "r1", Payload(tool_call_id="c1", tool_name="ask"))
    assert decoded(encoder.chunk(started)) == [
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "ask"}
    ]
    delta = Chunk("tool-call-delta", "r1", Payload(tool_call_id="c1", args_text_delta='{"q'))
    assert decoded(encoder.chunk(delta)) == [
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"q'}
    ]
    suspended = Chunk(
        "tool-call-suspended",
        "r1",
        Payload(tool_call_id="c1", tool_name="ask", suspend_payload={"question": "?"}),
    )
    (part,) = decoded(encoder.chunk(suspended))
    assert part["type"] == "data-tool-call-suspended"
    assert part["data"]["runId"] == "r1" and part["data"]["suspendPayload"] == {"question": "?"}
    assert decoded(encoder.end()) == [{"type": "finish", "finishReason": "tool-calls"}]


def test_a_run_over_the_request_timeout_ends_with_an_error_part() -> None:
    registry, _ = build()
    with TestClient(create_app(registry, ServerSettings(request_timeout=0.3))) as client:
        answer = client.post("/chat/slow", json={"messages": [{"id": "u1", "role": "user", "parts": []}]})
        assert answer.status_code == 400  # a message with no parts: nothing to answer
        body = {"messages": [{"id": "u2", "role": "user", "parts": [{"type": "text", "text": "tick"}]}]}
        answer = client.post("/chat/slow", json=body)
    lines = [line for line in answer.text.split("\n") if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    last = json.loads(lines[-2][6:])
    assert last["type"] == "error" and "0.3 s" in last["errorText"]
