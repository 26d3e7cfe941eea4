"""`sluicegate serve --temporal`: the agent routes start and decide workflows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.durable.served import served_durably

from sluicegate import Agent, Sluicegate, tool
from sluicegate.processors import Processor
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration


def _chunks(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]


async def test_stream_and_approve_through_the_routes(
    temporal_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[int] = []

    @tool
    async def refund(amount: int) -> str:
        """Refund money."""
        ran.append(amount)
        return "ok"

    model = MockModel([tool_call_step(("c1", "refund", {"amount": 7})), text_step("refunded 7")])
    agent = Agent("shop", model=model, tools=[refund])
    echo = Agent("echo", model=MockModel([text_step("hello")]))
    app = Sluicegate(agents={"shop": agent, "echo": echo})
    async with served_durably(app, temporal_server, monkeypatch) as (http, client, _):
        refused = await http.post(
            "/api/agents/shop/stream", json={"messages": "hi", "modelSettings": {"temperature": 0.5}}
        )
        assert refused.status_code == 400
        assert "model_settings" in refused.text or "modelSettings" in refused.text
        first = await http.post(
            "/api/agents/shop/stream", json={"messages": "refund 7", "requireToolApproval": True}
        )
        assert first.status_code == 200, first.text
        chunks = _chunks(first.text)
        assert chunks[-1]["type"] == "tool-call-approval"
        run_id = chunks[0]["runId"]
        assert first.headers["x-sluicegate-workflow-id"] == run_id
        stale = await http.post(
            "/api/agents/shop/approve-tool-call", json={"runId": run_id, "toolCallId": "nope"}
        )
        assert stale.status_code == 400 and "not the pending one" in stale.text
        other = await http.post(
            "/api/agents/shop/approve-tool-call",
            json={"runId": run_id, "toolCallId": "c1", "resourceId": "mallory"},
        )
        assert other.status_code == 404
        elsewhere = await http.post(  # another agent's route never decides this run
            "/api/agents/echo/approve-tool-call", json={"runId": run_id, "toolCallId": "c1"}
        )
        assert elsewhere.status_code == 404 and "runId" in elsewhere.text
        assert ran == []
        approved = await http.post(
            "/api/agents/shop/approve-tool-call", json={"runId": run_id, "toolCallId": "c1"}
        )
        assert approved.status_code == 200, approved.text
        rest = _chunks(approved.text)
        assert [c["type"] for c in rest][-1] == "finish"
        assert "".join(c["payload"]["text"] for c in rest if c["type"] == "text-delta") == "refunded 7"
        assert ran == [7]
        assert approved.headers["x-sluicegate-workflow-id"] == run_id
        generated = await http.post("/api/agents/echo/generate", json={"messages": "hi"})
        assert generated.status_code == 200, generated.text
        assert generated.headers["x-sluicegate-workflow-id"] == generated.json()["runId"]
        assert (await client.get_workflow_handle(generated.json()["runId"]).result())["text"] == "hello"
        # The run was a workflow (its id is the run id), not a run in the server's process.
        assert (await client.get_workflow_handle(run_id).result())["text"] == "refunded 7"


class RetryOnce(Processor):
    """Asks the model again the first time (allowed only with max_processor_retries)."""

    id = "retry-once"

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def process_output_step(self, args: Any) -> None:
        self.asked += 1
        if self.asked == 1:
            args.abort("try again", retry=True)


async def test_tool_choice_and_max_processor_retries_reach_a_durable_run(
    temporal_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    @tool
    async def lookup(city: str) -> str:
        """Look a city up."""
        return "sunny"

    model = MockModel([text_step("a bad answer"), text_step("a good answer")])
    agent = Agent("tuned", model=model, tools=[lookup], output_processors=[RetryOnce()])
    async with served_durably(Sluicegate(agents={"tuned": agent}), temporal_server, monkeypatch) as (
        http,
        client,
        _,
    ):
        refused = await http.post(
            "/api/agents/tuned/generate", json={"messages": "hi", "toolChoice": "never"}
        )
        assert refused.status_code == 400 and "toolChoice" in refused.text
        answer = await http.post(
            "/api/agents/tuned/generate",
            json={
                "messages": "hi",
                "toolChoice": {"type": "tool", "toolName": "lookup"},
                "maxProcessorRetries": 1,
            },
        )
        assert answer.status_code == 200, answer.text
        run_id = answer.json()["runId"]
        result = await client.get_workflow_handle(run_id).result()
    assert result["text"] == "a good answer" and result["tripwire"] is None
    assert [call.tool_choice for call in model.calls] == [{"type": "tool", "toolName": "lookup"}] * 2
