"""The AG-UI route under `sluicegate serve --temporal`: the run is a workflow, its events are
read from the run log, and an interrupt's answer is the workflow's validated update."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

pytest.importorskip("temporalio")
pytest.importorskip("ag_ui.core")

from temporalio.client import Client
from tests.durable.conftest import temporal_server  # noqa: F401  (the session's dev server)

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import create_worker
from sluicegate.server.app import create_app
from sluicegate.server.settings import ServerSettings
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration


def _events(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


async def test_an_approval_round_trip_through_the_workflow(
    temporal_server: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[int] = []

    @tool(require_approval=True)
    async def refund(amount: int) -> str:
        """Refund money."""
        ran.append(amount)
        return "ok"

    model = MockModel([tool_call_step(("c1", "refund", {"amount": 7})), text_step("refunded 7")])
    app = Sluicegate(agents={"shop": Agent("shop", model=model, tools=[refund])})
    queue = f"q-{uuid.uuid4()}"
    monkeypatch.setenv("SLUICEGATE_TEMPORAL", temporal_server.target)
    monkeypatch.setenv("SLUICEGATE_TEMPORAL_TASK_QUEUE", queue)
    server = create_app(app, ServerSettings())
    client = await Client.connect(temporal_server.target)
    run_input: dict[str, Any] = {
        "threadId": "t-durable",
        "runId": "r-1",
        "messages": [{"id": "m-1", "role": "user", "content": "refund 7"}],
    }
    async with (
        create_worker(client, app, task_queue=queue),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=server), base_url="http://test", timeout=60
        ) as http,
    ):
        tools = [{"name": "pick", "description": "the page's", "parameters": {"type": "object"}}]
        refused = await http.post("/api/agents/shop/ag-ui", json={**run_input, "tools": tools})
        assert refused.status_code == 400 and refused.json()["field"] == "tools"
        first = await http.post("/api/agents/shop/ag-ui", json=run_input)
        assert first.status_code == 200, first.text
        events = _events(first.text)
        assert [e["type"] for e in events] == [
            "RUN_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "RUN_FINISHED",
        ]
        (interrupt,) = events[-1]["outcome"]["interrupts"]
        workflow_id = interrupt["id"].split(":")[0]
        assert ran == []
        answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        second = await http.post(
            "/api/agents/shop/ag-ui", json={**run_input, "runId": "r-2", "resume": [answer]}
        )
        assert second.status_code == 200, second.text
        rest = _events(second.text)
        assert "".join(e["delta"] for e in rest if e["type"] == "TEXT_MESSAGE_CONTENT") == "refunded 7"
        assert rest[-1]["type"] == "RUN_FINISHED" and rest[-1]["outcome"] == {"type": "success"}
        assert ran == [7]
        # The run was a workflow (its id is the run id), not a run in the server's process.
        assert (await client.get_workflow_handle(workflow_id).result())["text"] == "refunded 7"
