"""Approval bypass through the tool routes (issue 30, finding 1): a tool that requires approval
is not run by `POST /api/tools/{id}/execute` nor by the agent's tool route (403 naming the rule),
even for an authenticated caller, unless the operator allows it; its description says
`requireApproval`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request

from sluicegate import Agent, Sluicegate, tool
from sluicegate.identity import Identity
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing.echo_model import EchoModel
from sluicegate.tools import create_tool

AUTH = {"Authorization": "Bearer s3cret", "x-user": "alice"}
RAN: list[Any] = []


@tool(require_approval=True)
async def refund(order: str) -> dict[str, str]:
    """Refunds an order; every call waits for a person."""
    RAN.append(order)
    return {"refunded": order}


@tool
async def lookup(order: str) -> dict[str, str]:
    """Looks an order up."""
    return {"order": order}


async def _sneaky(input: Any, context: Any) -> Any:
    RAN.append(input)
    return {"ran": True}


sneaky = create_tool(
    id="sneaky", description="Approval set to a function after construction.", execute=_sneaky
)
sneaky.require_approval = lambda *args: False  # type: ignore[assignment]  # not a plain False: fail closed


def _identity(request: Request) -> Identity | None:
    user = request.headers.get("x-user")
    return Identity(resource_id=user) if user else None


def _client(**settings: Any) -> TestClient:
    support = Agent(
        name="support", model=EchoModel(deltas=2), tools={"refund_order": refund, "lookup": lookup}
    )
    registry = Sluicegate(agents=[support], tools=[refund, lookup, sneaky], resolve_identity=_identity)
    return TestClient(create_app(registry, ServerSettings(api_token="s3cret", **settings)))


@pytest.fixture
def client() -> Iterator[TestClient]:
    RAN.clear()
    with _client() as client:
        yield client


@pytest.mark.parametrize(
    "path",
    [
        "/api/tools/refund/execute",
        "/api/agents/support/tools/refund/execute",  # by the tool's id
        "/api/agents/support/tools/refund_order/execute",  # by the agent's key for it
        "/api/tools/sneaky/execute",
    ],
)
def test_a_tool_that_requires_approval_is_not_run_directly(client: TestClient, path: str) -> None:
    answer = client.post(path, json={"data": {"order": "x"}}, headers=AUTH)
    assert answer.status_code == 403, answer.text
    body = answer.json()
    assert "requires approval" in body["error"] and "--allow-unapproved-tool-execution" in body["error"]
    assert body["code"] == "TOOL_REQUIRES_APPROVAL"
    assert RAN == []


def test_other_tools_still_run(client: TestClient) -> None:
    answer = client.post(
        "/api/agents/support/tools/lookup/execute", json={"data": {"order": "x"}}, headers=AUTH
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"order": "x"}


def test_the_description_says_it_requires_approval(client: TestClient) -> None:
    assert client.get("/api/tools/refund", headers=AUTH).json()["requireApproval"] is True
    assert client.get("/api/tools/lookup", headers=AUTH).json()["requireApproval"] is False
    listed = client.get("/api/tools", headers=AUTH).json()
    assert listed["refund"]["requireApproval"] is True and listed["sneaky"]["requireApproval"] is True
    agent = client.get("/api/agents/support", headers=AUTH).json()
    assert agent["tools"]["refund_order"]["requireApproval"] is True
    assert agent["tools"]["lookup"]["requireApproval"] is False
    assert client.get("/api/agents/support/tools/refund", headers=AUTH).json()["requireApproval"] is True


def test_the_operator_may_allow_it() -> None:
    RAN.clear()
    with _client(allow_unapproved_tool_execution=True) as client:
        answer = client.post("/api/tools/refund/execute", json={"data": {"order": "x"}}, headers=AUTH)
    assert answer.status_code == 200, answer.text
    assert RAN == ["x"]


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLUICEGATE_ALLOW_UNAPPROVED_TOOL_EXECUTION", raising=False)
    assert ServerSettings.from_env().allow_unapproved_tool_execution is False
    monkeypatch.setenv("SLUICEGATE_ALLOW_UNAPPROVED_TOOL_EXECUTION", "1")
    assert ServerSettings.from_env().allow_unapproved_tool_execution is True


def test_the_command_line_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from sluicegate.cli import main

    app = str(Path(__file__).parents[1] / "server" / "example_app.py")
    runs: list[ServerSettings] = []
    monkeypatch.delenv("SLUICEGATE_ALLOW_UNAPPROVED_TOOL_EXECUTION", raising=False)
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: runs.append(ServerSettings.from_env()))
    assert main(["serve", app]) == 0
    assert runs[-1].allow_unapproved_tool_execution is False
    assert main(["serve", app, "--allow-unapproved-tool-execution"]) == 0
    assert runs[-1].allow_unapproved_tool_execution is True
