"""`sluicegate serve --temporal`: the Responses API and A2A start workflows and read them back
from the run log, approvals included (the decision is a workflow update)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.durable.served import served_durably

from sluicegate import Agent, Sluicegate, tool
from sluicegate.memory import Memory
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration


def _events(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]


async def test_responses_and_a2a_through_the_run_log(
    temporal_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    ran: list[int] = []

    @tool(require_approval=True)
    async def refund(amount: int) -> str:
        """Refund money."""
        ran.append(amount)
        return "ok"

    storage = SQLiteStore(str(tmp_path / "memory.db"))
    model = MockModel(
        [
            text_step("hello"),
            tool_call_step(("c1", "refund", {"amount": 7})),
            text_step("refunded 7"),
            text_step("over a2a"),
        ]
    )
    agent = Agent("shop", model=model, tools=[refund], memory=Memory(storage=storage))
    app = Sluicegate(agents={"shop": agent}, storage=storage)
    async with served_durably(app, temporal_server, monkeypatch) as (http, _, _):
        streamed = await http.post(
            "/api/v1/responses", json={"agent_id": "shop", "input": "hi", "stream": True}
        )
        assert streamed.status_code == 200, streamed.text
        events = _events(streamed.text)
        assert events[-1]["type"] == "response.completed"
        assert events[-1]["response"]["output"][0]["content"][0]["text"] == "hello"
        asked = await http.post(
            "/api/v1/responses", json={"agent_id": "shop", "input": "refund 7", "store": True}
        )
        (request,) = asked.json()["output"]
        assert request["type"] == "mcp_approval_request" and ran == []
        answer = {"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": True}
        approved = await http.post(
            "/api/v1/responses", json={"previous_response_id": asked.json()["id"], "input": [answer]}
        )
        assert approved.status_code == 200, approved.text
        assert ran == [7]
        assert approved.json()["output"][-1]["content"][0]["text"] == "refunded 7"
        message = {
            "kind": "message",
            "messageId": "m",
            "role": "user",
            "parts": [{"kind": "text", "text": "go"}],
        }
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
        task = (await http.post("/api/a2a/shop", json=rpc)).json()["result"]
        assert task["status"]["state"] == "completed"
        assert task["artifacts"][0]["parts"][0]["text"] == "over a2a"
        refused = await http.post(
            "/api/v1/responses",
            json={"agent_id": "shop", "input": "x", "temperature": 0.5},
        )
        assert refused.status_code == 400 and "model_settings" in refused.text  # not durable-able
