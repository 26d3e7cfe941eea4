"""`EventStream`: chunks to AG-UI events, checked event by event against the `ag-ui-protocol`
package's models (what the route's tests reach only through a model's run)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate.errors import APICallError
from sluicegate.stream.chunk import Chunk, TextPayload
from sluicegate.stream.payload import Payload

core = pytest.importorskip("ag_ui.core")

from sluicegate.server.protocols.ag_ui.events import EventStream, frame  # noqa: E402


def decoded(data: bytes) -> list[dict[str, Any]]:
    from pydantic import TypeAdapter

    check = TypeAdapter(core.Event)
    events = [json.loads(record[6:]) for record in data.decode().split("\n\n") if record]
    for event in events:
        check.validate_python(event)
    return events


def chunk(kind: str, data: Any = None, **payload: Any) -> Chunk[Any]:
    return Chunk(kind, "run-x", Payload(**payload), data=data)


def stream(**options: Any) -> EventStream:
    return EventStream(core, thread_id="t", run_id="r", **options)


def test_a_text_delta_is_the_packages_own_serialization() -> None:
    events = stream()
    events.chunk(chunk("step-start", message_id="m-1"))
    events.chunk(chunk("text-start", id="a"))
    delta = events.chunk(Chunk("text-delta", "run-x", TextPayload("a", 'say "hé"\n')))
    assert delta == frame(core.TextMessageContentEvent(message_id="m-1", delta='say "hé"\n'))


def test_reasoning_and_text_close_before_a_tool_call_and_at_the_end() -> None:
    events = stream()
    out = events.chunk(chunk("reasoning-start", id="r"))
    out += events.chunk(Chunk("reasoning-delta", "run-x", TextPayload("r", "hmm")))
    out += events.chunk(Chunk("text-delta", "run-x", TextPayload("t", "hi")))
    out += events.chunk(chunk("tool-call", tool_call_id="c", tool_name="add", args={"a": 1}))
    out += events.finished()
    assert [e["type"] for e in decoded(out)] == [
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    assert events.ended and events.finished() == b""


def test_state_and_data_chunks() -> None:
    events = stream()
    out = events.chunk(chunk("data-state", data={"count": 1}))
    out += events.chunk(chunk("data-state-delta", data=[{"op": "replace", "path": "/count", "value": 2}]))
    out += events.chunk(chunk("data-progress", data={"done": 3}))
    snapshot, delta, custom = decoded(out)
    assert snapshot == {"type": "STATE_SNAPSHOT", "snapshot": {"count": 1}}
    assert delta["type"] == "STATE_DELTA" and delta["delta"][0]["value"] == 2
    assert custom == {"type": "CUSTOM", "name": "data-progress", "value": {"done": 3}}


def test_a_provider_error_goes_out_as_its_public_summary_only() -> None:
    secret = "upstream said: key sk-live-123 is revoked"
    live = stream().chunk(chunk("error", error=APICallError(secret, status_code=401)))
    logged = stream().chunk(
        chunk("error", error={"message": secret, "name": "APICallError", "statusCode": 401})
    )
    for out in (live, logged):
        (event,) = decoded(out)
        assert event["type"] == "RUN_ERROR" and "sk-live" not in out.decode()
    assert decoded(logged)[0]["message"] == "the model provider failed (HTTP 401)"
    shown = stream(error_details=True).chunk(chunk("error", error={"message": secret, "statusCode": 401}))
    assert secret in decoded(shown)[0]["message"]


def test_an_abort_is_the_cancelled_outcome_and_ends_the_run() -> None:
    events = stream()
    (event,) = decoded(events.chunk(chunk("abort")))
    assert event["outcome"] == {"type": "cancelled"} and events.ended


def test_a_frontend_call_is_pending_and_a_server_suspension_an_interrupt() -> None:
    events = stream(frontend=frozenset({"pick"}))
    events.chunk(
        chunk(
            "tool-call-suspended",
            tool_call_id="c1",
            tool_name="pick",
            suspend_payload="sluicegate:frontend-tool",
        )
    )
    assert events.pending == ["c1"] and not events.interrupts
    # a server tool of the same name as a client's never counts as the client's
    events.chunk(chunk("tool-call-suspended", tool_call_id="c2", tool_name="ask", suspend_payload={"q": 1}))
    (finished,) = decoded(events.finished())
    assert finished["outcome"]["type"] == "interrupt"
    assert finished["outcome"]["interrupts"][0]["id"] == "run-x:c2"
