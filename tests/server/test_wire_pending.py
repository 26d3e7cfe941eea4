"""A suspended `generate` names the call it waits on where Mastra's server does: in the metadata
of the assistant message holding the call (`pendingToolApprovals` / `suspendedTools`, keyed by
the call's id); once the call is decided, no message says it is pending."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate, create_tool
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.wire_steps import APPROVAL_RESUME_SCHEMA
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step


async def _lookup(input: Any, context: Any) -> dict[str, str]:
    return {"answer": f"found {input['query']}"}


async def _ask(input: Any, context: Any) -> Any:
    if context.resume_data is None:
        return await context.suspend({"question": "which?"})
    return context.resume_data


def _schema(name: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    lookup = create_tool(id="lookup", description="Look up", input_schema=_schema("query"), execute=_lookup)
    ask = create_tool(
        id="ask",
        description="Ask",
        input_schema={"type": "object", "properties": {}},
        resume_schema=_schema("colour"),
        execute=_ask,
    )
    looker_steps = [tool_call_step(("c1", "lookup", {"query": "cats"})), text_step("Cats found")]
    registry = Sluicegate(
        agents={
            "looker": Agent(
                name="looker", instructions="i", model=MockModel(looker_steps * 20), tools={"lookup": lookup}
            ),
            "asker": Agent(
                name="asker",
                instructions="i",
                model=MockModel([tool_call_step(("a1", "ask", {})), text_step("ok")] * 20),
                tools={"ask": ask},
            ),
        }
    )
    with TestClient(create_app(registry, ServerSettings())) as c:
        yield c


def _holder(messages: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    [message] = [
        m
        for m in messages
        if any(p.get("toolInvocation", {}).get("toolCallId") == call_id for p in m["content"]["parts"])
    ]
    return message


def test_a_suspended_generate_lists_its_pending_approval_on_the_message_holding_the_call(
    client: TestClient,
) -> None:
    body = client.post(
        "/api/agents/looker/generate", json={"messages": "cats", "requireToolApproval": True}
    ).json()
    assert body["finishReason"] == "suspended"
    entry = {
        "toolCallId": "c1",
        "toolName": "lookup",
        "args": {"query": "cats"},
        "type": "approval",
        "runId": body["runId"],
        "resumeSchema": APPROVAL_RESUME_SCHEMA,
    }
    for messages in (body["messages"], body["response"]["dbMessages"]):
        assert _holder(messages, "c1")["content"]["metadata"]["pendingToolApprovals"] == {"c1": entry}
    assert "pendingToolApprovals" not in json.dumps([m for m in body["messages"] if m["role"] == "user"])

    decided = client.post(
        "/api/agents/looker/approve-tool-call-generate", json={"runId": body["runId"], "toolCallId": "c1"}
    ).json()
    assert decided["text"] == "Cats found"
    assert "pendingToolApprovals" not in json.dumps(decided)  # decided: nothing is pending


def test_a_suspended_tool_is_listed_with_its_question_and_the_answer_it_takes(client: TestClient) -> None:
    body = client.post("/api/agents/asker/generate", json={"messages": "go"}).json()
    assert body["finishReason"] == "suspended"
    metadata = _holder(body["response"]["dbMessages"], "a1")["content"]["metadata"]
    assert "pendingToolApprovals" not in metadata
    entry = metadata["suspendedTools"]["a1"]
    assert entry["type"] == "suspension" and entry["runId"] == body["runId"]
    assert entry["suspendPayload"] == {"question": "which?"}
    assert json.loads(entry["resumeSchema"])["required"] == ["colour"]
