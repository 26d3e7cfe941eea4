"""`POST /chat/{agentId}` under `sluicegate serve --temporal`: the run is a workflow, the UI
message stream is read from its run log, the approval goes to the workflow as a validated
update, and the redaction holds there too."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

pytest.importorskip("temporalio")

from temporalio.client import Client
from tests.durable.conftest import temporal_server  # noqa: F401  (the session's dev server)

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import create_worker
from sluicegate.processors import RegexFilter
from sluicegate.server.app import create_app
from sluicegate.server.settings import ServerSettings
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration


def _parts(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]


async def test_a_durable_run_streams_waits_for_approval_and_goes_on(
    temporal_server: Any,  # noqa: F811  (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[int] = []

    @tool(require_approval=True)
    async def refund(amount: int) -> str:
        """Refund money."""
        ran.append(amount)
        return "ok"

    model = MockModel([tool_call_step(("c1", "refund", {"amount": 7})), text_step("sent to ada@example.com")])
    redact = RegexFilter(presets=["pii"], strategy="redact", phase="output")
    app = Sluicegate(agents={"shop": Agent("shop", model=model, tools=[refund], output_processors=[redact])})
    queue = f"q-{uuid.uuid4()}"
    monkeypatch.setenv("SLUICEGATE_TEMPORAL", temporal_server.target)
    monkeypatch.setenv("SLUICEGATE_TEMPORAL_TASK_QUEUE", queue)
    server = create_app(app, ServerSettings())
    client = await Client.connect(temporal_server.target)
    transport = httpx.ASGITransport(app=server)
    async with (
        create_worker(client, app, task_queue=queue),
        httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as http,
    ):
        ask = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "refund 7"}]}
        first = await http.post("/chat/shop", json={"id": "chat-durable", "messages": [ask]})
        assert first.status_code == 200, first.text
        assert first.headers["x-vercel-ai-ui-message-stream"] == "v1"
        run_id = first.headers["x-sluicegate-workflow-id"]
        request = next(p for p in _parts(first.text) if p["type"] == "tool-approval-request")
        assert request == {"type": "tool-approval-request", "approvalId": f"{run_id}::c1", "toolCallId": "c1"}
        assert ran == []
        tool_part = {"type": "tool-refund", "toolCallId": "c1", "state": "approval-responded"}
        answered = {
            "id": "a1",
            "role": "assistant",
            "parts": [{**tool_part, "approval": {"id": f"{run_id}::c1", "approved": True}}],
        }
        second = await http.post("/chat/shop", json={"id": "chat-durable", "messages": [ask, answered]})
        assert second.status_code == 200, second.text
        rest = _parts(second.text)
        assert rest[0] == {"type": "start", "messageId": "a1"}
        assert {"type": "tool-output-available", "toolCallId": "c1", "output": "ok"} in rest
        assert "".join(p["delta"] for p in rest if p["type"] == "text-delta") == "sent to [EMAIL]"
        assert "ada@" not in second.text
        assert rest[-1]["type"] == "finish"
        assert ran == [7]
        assert (await client.get_workflow_handle(run_id).result())["text"] == "sent to [EMAIL]"
