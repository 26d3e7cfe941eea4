"""What a client reads from `start`, `step-finish`, `finish` and a `generate` body: the fields
Mastra's server sends (the whole wire is compared against real Mastra in test_wire.py, which
needs Node; these need nothing)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import sse_events

from sluicegate import Agent, Sluicegate, create_tool
from sluicegate.processors import Processor
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step


async def _lookup(input: Any, context: Any) -> dict[str, str]:
    return {"answer": f"found {input['query']}"}


class _Forbidden(Processor):
    id = "forbidden-word"

    def process_input(self, args: Any) -> Any:
        if any("forbidden" in m.text for m in args.messages):
            args.abort("not allowed")
        return args.messages


def _tool() -> Any:
    schema = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    return create_tool(id="lookup", description="Look up", input_schema=schema, execute=_lookup)


def _asker() -> Any:
    async def ask(input: Any, context: Any) -> Any:
        if context.resume_data is None:
            return await context.suspend({"question": "which?"})
        return context.resume_data

    schema = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}
    return create_tool(
        id="ask",
        description="Ask",
        input_schema={"type": "object", "properties": {}},
        resume_schema=schema,
        execute=ask,
    )


@pytest.fixture
def client() -> Iterator[TestClient]:
    steps = [tool_call_step(("c1", "lookup", {"query": "cats"})), text_step("Cats found")]
    registry = Sluicegate(
        agents={
            "looker": Agent(
                name="looker", instructions="i", model=MockModel(steps * 50), tools={"lookup": _tool()}
            ),
            "plain": Agent(name="plain", instructions="i", model=MockModel([text_step("hi there")] * 50)),
            "guarded": Agent(
                name="guarded",
                instructions="i",
                model=MockModel([text_step("x")] * 5),
                input_processors=[_Forbidden()],
            ),
            "asker": Agent(
                name="asker",
                instructions="i",
                model=MockModel([tool_call_step(("a1", "ask", {})), text_step("ok")] * 5),
                tools={"ask": _asker()},
            ),
        }
    )
    with TestClient(create_app(registry, ServerSettings())) as c:
        yield c


def _stream(client: TestClient, agent: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    events, done = sse_events(client.post(f"/api/agents/{agent}/stream", json=body).text)
    assert done
    return events


def test_finish_carries_the_answer_the_tool_calls_the_steps_and_the_model_messages(
    client: TestClient,
) -> None:
    events = _stream(client, "looker", {"messages": "cats"})
    start, finish = events[0], events[-1]
    assert start["type"] == "start" and start["payload"]["id"] == "looker"
    payload = finish["payload"]
    assert payload["messageId"] == start["payload"]["messageId"]
    assert payload["output"]["text"] == "Cats found"
    assert payload["stepResult"] == {"reason": "stop", "isContinued": False}
    first, second = payload["output"]["steps"]
    assert first["content"][0] == {
        "type": "tool-call",
        "toolCallId": "c1",
        "toolName": "lookup",
        "input": {"query": "cats"},
    }
    assert first["content"][1]["output"] == {"type": "json", "value": {"answer": "found cats"}}
    assert second["content"][0]["text"] == "Cats found"
    assert payload["metadata"]["modelMetadata"]["modelId"] == payload["response"]["modelId"]
    roles = [m["role"] for m in payload["response"]["messages"]]
    assert roles == ["assistant", "tool", "assistant"]  # tool results as role `tool`
    assert payload["output"]["usage"]["raw"] == second["usage"]["raw"]  # the last step's own report
    assert payload["messages"]["user"][0]["content"][0]["text"] == "cats"


def test_step_finish_of_a_tool_call_step_continues_and_names_its_calls(client: TestClient) -> None:
    events = _stream(client, "looker", {"messages": "cats"})
    tool_step = next(e for e in events if e["type"] == "step-finish")
    assert tool_step["payload"]["stepResult"]["isContinued"] is True
    assert tool_step["payload"]["output"]["toolCalls"] == [
        {"toolCallId": "c1", "toolName": "lookup", "args": {"query": "cats"}}
    ]
    assert tool_step["payload"]["output"]["text"] == ""


def test_generate_answers_model_messages_and_keeps_stored_ones_in_db_messages(client: TestClient) -> None:
    body = client.post("/api/agents/looker/generate", json={"messages": "cats"}).json()
    assert [m["role"] for m in body["response"]["messages"]] == ["assistant", "tool", "assistant"]
    assert all("content" in m and "id" in m for m in body["response"]["dbMessages"])
    assert [s["stepType"] for s in body["steps"]] == ["initial", "tool-result"]
    assert body["steps"][1]["response"]["messages"] == body["response"]["messages"]
    assert body["messages"][0]["role"] == "user"  # the input, then the response's stored messages
    assert body["messages"][1:] == body["response"]["dbMessages"]
    assert body["rememberedMessages"] == [] and body["warnings"] == [] and body["files"] == []
    model = body["response"]["modelMetadata"]  # the stored message names the model that wrote it
    stored = body["response"]["dbMessages"][-1]["content"]["metadata"]
    assert stored == {"modelId": model["modelId"], "provider": model["modelProvider"]}
    assert body["response"]["uiMessages"][-1]["metadata"]["modelId"] == model["modelId"]


def test_an_input_processor_tripwire_is_the_streams_only_event(client: TestClient) -> None:
    events = _stream(client, "guarded", {"messages": "this is forbidden"})
    assert [e["type"] for e in events] == ["tripwire"]
    assert "retry" not in events[0]["payload"]
    body = client.post("/api/agents/guarded/generate", json={"messages": "forbidden"}).json()
    assert "retry" not in body["tripwire"] and body["usage"] == {}


def test_questions_carry_the_resume_schema_their_answer_takes(client: TestClient) -> None:
    asked = _stream(client, "asker", {"messages": "go"})[-1]
    assert asked["type"] == "tool-call-suspended"
    assert json.loads(asked["payload"]["resumeSchema"])["required"] == ["colour"]


def test_start_and_step_start_and_text_end_carry_mastras_fields(client: TestClient) -> None:
    events = _stream(client, "plain", {"messages": "hi"})
    by_type = {e["type"]: e for e in events}
    assert by_type["step-start"]["payload"]["request"] == {}
    assert by_type["step-start"]["payload"]["warnings"] == []
    assert by_type["text-end"]["payload"]["type"] == "text-end"
    assert by_type["finish"]["payload"]["response"]["messages"][0]["content"][0]["text"] == "hi there"


def test_a_declined_call_says_which_args_and_which_approval(client: TestClient) -> None:
    asked = _stream(client, "looker", {"messages": "cats", "requireToolApproval": True})[-1]
    assert asked["type"] == "tool-call-approval"
    assert json.loads(asked["payload"]["resumeSchema"])["required"] == ["approved"]
    declined = _stream_decision(client, asked["runId"], "not today")
    denied = next(e for e in declined if e["type"] == "tool-output-denied")["payload"]
    assert denied["args"] == {"query": "cats"}
    assert denied["approval"] == {"id": "c1", "approved": False, "reason": "not today"}
    assert (
        next(e for e in declined if e["type"] == "step-finish")["payload"]["stepResult"]["isContinued"]
        is True
    )


def _stream_decision(client: TestClient, run_id: str, reason: str) -> list[dict[str, Any]]:
    response = client.post("/api/agents/looker/decline-tool-call", json={"runId": run_id, "reason": reason})
    events, done = sse_events(response.text)
    assert done, response.text
    return events


def test_structured_output_streams_object_events_and_finishes_with_the_object() -> None:
    steps = [
        [
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": '{"answer":'},
            {"type": "text-delta", "id": "t", "delta": '"42"}'},
            {"type": "text-end", "id": "t"},
            {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
        ]
    ]
    agent = Agent(name="json", instructions="i", model=MockModel(steps))
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    with TestClient(create_app(Sluicegate(agents={"json": agent}), ServerSettings())) as c:
        events = _stream(c, "json", {"messages": "q", "structuredOutput": {"schema": schema}})
    kinds = [e["type"] for e in events]
    assert kinds.index("object-result") == kinds.index("step-finish") - 1
    assert [e["object"] for e in events if e["type"] == "object"] == [{}, {"answer": "42"}]
    assert events[-1]["payload"]["output"]["object"] == {"answer": "42"}


def test_thread_messages_say_their_type_and_page_by_mastras_default(client: TestClient) -> None:
    from sluicegate.memory import Memory
    from sluicegate.storage import SQLiteStore

    agent = Agent(
        name="m",
        instructions="i",
        model=MockModel([text_step("hey")] * 3),
        memory=Memory(storage=SQLiteStore(":memory:")),
    )
    with TestClient(create_app(Sluicegate(agents={"m": agent}), ServerSettings())) as c:
        c.post("/api/agents/m/generate", json={"messages": "hi", "memory": {"thread": "t1", "resource": "u"}})
        page = c.get("/api/memory/threads/t1/messages", params={"agentId": "m"}).json()
        status = c.get("/api/memory/status", params={"agentId": "m"}).json()
    assert page["perPage"] == 40
    assert [m["type"] for m in page["messages"]] == ["text", "text"]
    assert status == {"result": True, "memoryType": "local"}


def test_the_agent_list_says_no_agent_has_an_editor_draft(client: TestClient) -> None:
    listed = client.get("/api/agents").json()
    assert {key: agent["hasDraft"] for key, agent in listed.items()} == dict.fromkeys(listed, False)
    assert "hasDraft" not in client.get("/api/agents/plain").json()  # as Mastra: the list only
