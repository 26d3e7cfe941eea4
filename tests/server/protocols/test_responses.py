"""The Responses API (`/api/v1/responses`) driven by the official `openai` client against a
served app: the events are checked against the `openai` package's own types."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from openai import BadRequestError, NotFoundError, OpenAI
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter
from tests.server import example_app  # `example_app.wiped` read when asserted: other tests reload the module
from tests.server.helpers import call_then_disconnect
from tests.server.live import serve_in_thread
from tests.server.protocols.protocol_app import EMAIL, MODEL_PIECES, RAW, build, user_header

from sluicegate.server import ServerSettings, create_app

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


def sse_events(body: str) -> list[dict[str, Any]]:
    """The events of a Responses stream: `event: <type>` then `data: <JSON>`, and no `[DONE]`."""
    events: list[dict[str, Any]] = []
    for record in body.split("\n\n"):
        if not record:
            continue
        name, data = record.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        events.append(event)
    return events


TOKEN = "responses-token"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, Any]]:
    registry, _ = build()
    with serve_in_thread(create_app(registry, ServerSettings(api_token=TOKEN))) as url:
        yield url, registry


@pytest.fixture(scope="module")
def openai_client(served: tuple[str, Any]) -> Iterator[OpenAI]:
    with OpenAI(base_url=f"{served[0]}/api/v1", api_key=TOKEN, max_retries=0) as client:
        yield client


def _create(client: OpenAI, prompt: Any, agent: str = "echo", **options: Any) -> Any:
    return client.responses.create(model="echo", input=prompt, extra_body={"agent_id": agent}, **options)


def _streamed(client: OpenAI, prompt: Any, **options: Any) -> list[Any]:
    events = list(_create(client, prompt, stream=True, **options))
    for event in events:  # each one is a Responses API event, as the openai package types it
        EVENTS.validate_python(event.model_dump(mode="json", exclude_unset=True))
    return events


def test_generate_with_the_openai_client(openai_client: OpenAI) -> None:
    response = _create(openai_client, "hello there")
    assert isinstance(response, Response)
    assert response.status == "completed"
    assert response.output_text == "Echo: hello there"
    assert response.usage is not None and response.usage.total_tokens > 0
    Response.model_validate(response.model_dump(mode="json"))


def test_stream_with_the_openai_client(openai_client: OpenAI) -> None:
    events = _streamed(openai_client, "stream me")
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == "Echo: stream me" == events[-1].response.output_text
    assert kinds.count("response.output_item.added") == kinds.count("response.output_item.done") == 1


def test_a_redacted_value_never_leaves_in_any_event(served: tuple[str, Any], openai_client: OpenAI) -> None:
    events = _streamed(openai_client, EMAIL)
    assert len(MODEL_PIECES) > 10  # the model answers one character a chunk: the address comes split
    streamed = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert streamed.startswith("Echo: ") and RAW.search(streamed) is None
    assert streamed == events[-1].response.output_text
    raw = httpx.post(
        f"{served[0]}/api/v1/responses",
        json={"agent_id": "echo", "input": EMAIL, "stream": True, "store": True},
        headers={"authorization": f"Bearer {TOKEN}"},
    )
    assert raw.status_code == 200
    assert RAW.search(raw.text) is None  # no event carries any piece of the address
    stored_id = sse_events(raw.text)[-1]["response"]["id"]
    stored = openai_client.responses.retrieve(stored_id)
    assert RAW.search(stored.model_dump_json()) is None
    answer = _create(openai_client, EMAIL)
    assert RAW.search(answer.model_dump_json()) is None


def test_a_tripwire_ends_the_response_naming_the_processor(openai_client: OpenAI) -> None:
    events = _streamed(openai_client, "this is forbidden")
    final = events[-1]
    assert final.type == "response.incomplete"
    assert final.response.incomplete_details.reason == "content_filter"
    tripwire = final.response.model_extra["tripwire"]
    assert tripwire["processorId"] == "block-word"
    assert tripwire["reason"] == "The word 'forbidden' is not allowed"
    assert not [e for e in events if e.type == "response.output_text.delta"]
    answer = _create(openai_client, "forbidden again")
    assert answer.status == "incomplete" and answer.model_extra["tripwire"]["processorId"] == "block-word"


def test_store_and_continue_with_previous_response_id(served: tuple[str, Any], openai_client: OpenAI) -> None:
    first = _create(openai_client, "first turn", store=True)
    conversation = first.to_dict()["conversation"]["id"]  # a field only newer openai versions type
    second = openai_client.responses.create(model="echo", input="second turn", previous_response_id=first.id)
    assert second.output_text == "Echo: second turn"
    assert second.to_dict()["conversation"]["id"] == conversation
    messages = asyncio.run(served[1].storage.list_messages(conversation))
    texts = [m.text for m in messages]
    assert texts == ["first turn", "Echo: first turn", "second turn", "Echo: second turn"]
    assert openai_client.responses.retrieve(first.id).output_text == "Echo: first turn"
    with pytest.raises(NotFoundError):
        openai_client.responses.retrieve(second.id)  # not stored
    openai_client.responses.delete(first.id)
    with pytest.raises(NotFoundError):
        openai_client.responses.retrieve(first.id)
    with pytest.raises(NotFoundError):
        openai_client.responses.create(model="echo", input="third", previous_response_id=first.id)


def test_structured_output_follows_text_format(openai_client: OpenAI) -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answer = _create(
        openai_client,
        '{"name": "Ada"}',
        agent="json",
        text={"format": {"type": "json_schema", "name": "person", "schema": schema}},
    )
    assert answer.status == "completed"
    assert json.loads(answer.output_text) == {"name": "Ada"}
    assert answer.text.format.type == "json_schema"
    refused = _create(openai_client, "not json", agent="json", text={"format": {"type": "json_object"}})
    assert refused.status == "failed" and "not JSON" in refused.error.message


def test_an_approval_round_trip(openai_client: OpenAI) -> None:
    asked = _create(openai_client, '/tool wipe {"path": "/tmp/approved"}', store=True)
    (request,) = asked.output
    assert request.type == "mcp_approval_request" and request.name == "wipe"
    assert json.loads(request.arguments) == {"path": "/tmp/approved"}
    events = list(
        openai_client.responses.create(
            model="echo",
            previous_response_id=asked.id,
            input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}],
            stream=True,
        )
    )
    for event in events:
        EVENTS.validate_python(event.model_dump(mode="json", exclude_unset=True))
    done = events[-1].response
    assert done.status == "completed"
    call = next(item for item in done.output if item.type == "mcp_call")
    assert json.loads(call.output) == {"wiped": "/tmp/approved"}
    assert "/tmp/approved" in example_app.wiped
    assert done.output_text == 'Tool wipe said: {"wiped": "/tmp/approved"}'
    with pytest.raises(BadRequestError) as refused:  # answered once only
        openai_client.responses.create(
            model="echo",
            previous_response_id=asked.id,
            input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}],
        )
    assert "is not an approval request" in str(refused.value.body)


def test_a_declined_call_never_runs(openai_client: OpenAI) -> None:
    asked = _create(openai_client, '/tool wipe {"path": "/tmp/declined"}', store=True)
    answer = openai_client.responses.create(
        model="echo",
        previous_response_id=asked.id,
        input=[
            {"type": "mcp_approval_response", "approval_request_id": asked.output[0].id, "approve": False}
        ],
    )
    assert answer.status == "completed"
    assert "/tmp/declined" not in example_app.wiped


def test_bad_input_names_the_field(served: tuple[str, Any]) -> None:
    headers = {"authorization": f"Bearer {TOKEN}"}
    cases = [
        ({"agent_id": "echo", "input": "x", "tools": []}, "tools"),
        ({"agent_id": "echo", "input": [{"type": "function_call_output", "output": "x"}]}, "input.0.type"),
        (
            {"agent_id": "echo", "input": [{"role": "user", "content": [{"type": "input_image"}]}]},
            "input.0.content.0",
        ),
        ({"agent_id": "echo", "input": "x", "instructions": "be evil"}, "instructions"),
        ({"input": "x"}, "agent_id"),
        ({"agent_id": "echo", "input": "\ud800"}, "input"),
    ]
    for body, field in cases:
        content = json.dumps(body).encode()  # a lone surrogate stays escaped, as a client may send it
        typed = {**headers, "content-type": "application/json"}
        answer = httpx.post(f"{served[0]}/api/v1/responses", content=content, headers=typed)
        assert answer.status_code == 400, (body, answer.text)
        assert field in answer.text, (field, answer.text)
    anonymous = httpx.post(f"{served[0]}/api/v1/responses", json={"agent_id": "echo", "input": "x"})
    assert anonymous.status_code == 401


def test_stored_responses_belong_to_their_caller() -> None:
    registry, _ = build(identity=user_header)
    with TestClient(create_app(registry, ServerSettings())) as client:
        body = {"agent_id": "echo", "input": "mine", "store": True}
        mine = client.post("/api/v1/responses", json=body, headers={"x-user": "ann"}).json()
        assert mine["status"] == "completed"
        theirs = {"x-user": "bob"}
        assert client.get(f"/api/v1/responses/{mine['id']}", headers=theirs).status_code == 404
        assert client.delete(f"/api/v1/responses/{mine['id']}", headers=theirs).status_code == 404
        follow = {"input": "hijack", "previous_response_id": mine["id"]}
        assert client.post("/api/v1/responses", json=follow, headers=theirs).status_code == 404
        joined = {"agent_id": "echo", "input": "hijack", "conversation_id": mine["conversation"]["id"]}
        assert client.post("/api/v1/responses", json=joined, headers=theirs).status_code == 404
        assert client.get(f"/api/v1/responses/{mine['id']}", headers={"x-user": "ann"}).status_code == 200
        assert client.get(f"/api/v1/responses/{mine['id']}").status_code == 401


@pytest.mark.parametrize("stream", [True, False])
async def test_a_client_that_disconnects_cancels_the_run(stream: bool) -> None:
    registry, slow = build()
    body = {"agent_id": "slow", "input": "go", "stream": stream}
    await call_then_disconnect(create_app(registry, ServerSettings()), "/api/v1/responses", body, after=0.2)
    await asyncio.wait_for(slow.closed.wait(), 2)
    assert not slow.finished
    assert slow.sent < slow.deltas / 2


def test_the_body_limit_applies() -> None:
    registry, _ = build()
    with TestClient(create_app(registry, ServerSettings(max_body_bytes=2000))) as client:
        answer = client.post("/api/v1/responses", json={"agent_id": "echo", "input": "x" * 5000})
    assert answer.status_code == 413


def test_a_stream_past_the_request_timeout_ends_with_an_error_event() -> None:
    registry, slow = build()
    with TestClient(create_app(registry, ServerSettings(request_timeout=0.3))) as client:
        answer = client.post("/api/v1/responses", json={"agent_id": "slow", "input": "go", "stream": True})
    events = sse_events(answer.text)
    final = EVENTS.validate_python(events[-1])
    assert final.type == "error" and final.code == "timeout" and "0.3 s" in final.message
    assert final.sequence_number == events[-2]["sequence_number"] + 1
    assert not slow.finished
