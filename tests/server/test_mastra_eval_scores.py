"""Guardrail eval reports as Mastra scores: each report `POST /api/eval` makes is listed as a
score row of a scorer per evaluated chain and phase, its score a number the report computed
(F1 over labelled spans, else verdict accuracy); a report with no such number is not listed;
the kept rows are bounded; with an identity hook a caller sees only its own reports."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate
from sluicegate.identity import Identity
from sluicegate.processors import PIIDetector
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.mastra import eval_scores
from sluicegate.testing import MockModel


def _dataset(*rows: dict[str, Any]) -> str:
    return "\n".join(json.dumps(row) for row in rows)


SPANS = _dataset(
    {"text": "mail joe.bloggs@example.com", "spans": [{"start": 5, "end": 27, "label": "EMAIL_ADDRESS"}]},
    {"text": "nothing here", "expected": "pass"},
)
VERDICTS = _dataset({"text": "nothing here", "expected": "pass"}, {"text": "hi there", "expected": "block"})
NO_NUMBER = _dataset({"text": "nothing here", "spans": []})


def _users(request: Request) -> Identity | None:
    user = request.headers.get("x-user")
    return None if user is None else Identity(resource_id=user)


@pytest.fixture
def make() -> Iterator[Any]:
    clients: list[TestClient] = []

    def build(**registry: Any) -> TestClient:
        pii = PIIDetector(redaction_method="placeholder")
        agent = Agent(name="support", model=MockModel([]), input_processors=[pii], output_processors=[pii])
        app = create_app(Sluicegate(agents=[agent], **registry), ServerSettings(studio=True))
        client = TestClient(app)
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


def _eval(client: TestClient, dataset: str, headers: dict[str, str] | None = None, **body: Any) -> Any:
    answer = client.post("/api/eval", json={"dataset": dataset, **body}, headers=headers or {})
    assert answer.status_code == 200, answer.text
    return answer.json()["report"]


def test_an_eval_report_is_a_score_of_its_chains_scorer(make: Any) -> None:
    client = make()
    assert client.get("/api/scores/scorers").json() == {}
    report = _eval(client, SPANS, agentId="support", phase="output")
    listed = client.get("/api/scores/scorers").json()
    assert list(listed) == ["eval:support:output"]
    entry = listed["eval:support:output"]
    assert (
        entry["scorer"]["config"]["id"] == "eval:support:output" and entry["scorer"]["config"]["description"]
    )
    assert entry["agentIds"] == ["support"] and entry["isRegistered"] is False
    assert client.get("/api/scores/scorers/eval:support:output").json() == entry
    assert client.get("/api/scores/scorers/eval:nobody:input").json() is None
    page = client.get("/api/scores/scorer/eval:support:output").json()
    assert page["pagination"] == {"total": 1, "page": 0, "perPage": 10, "hasMore": False}
    (row,) = page["scores"]
    assert row["score"] == report["all"]["f1"] and row["metadata"] == {"metric": "f1"}
    assert row["output"] == report and row["source"] == "TEST" and row["entityId"] == "support"
    assert "F1" in row["reason"]
    # A chain of named processors is a scorer of its own.
    _eval(client, SPANS, processors=["pii-detector"])
    assert set(client.get("/api/scores/scorers").json()) == {"eval:support:output", "eval:pii-detector:input"}
    assert (
        client.get("/api/scores/scorer/eval:support:output", params={"entityId": "other"}).json()["scores"]
        == []
    )


def test_without_spans_the_score_is_the_verdict_accuracy_and_without_either_nothing_is_kept(
    make: Any,
) -> None:
    client = make()
    report = _eval(client, VERDICTS, agentId="support")
    (row,) = client.get("/api/scores/scorer/eval:support:input").json()["scores"]
    assert row["metadata"] == {"metric": "verdict_accuracy"}
    assert row["score"] == report["verdicts"]["accuracy"]
    _eval(client, NO_NUMBER, agentId="support", phase="output")
    assert "eval:support:output" not in client.get("/api/scores/scorers").json()


def test_kept_reports_are_bounded_and_paged_newest_first(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eval_scores, "KEPT", 3)
    client = make()
    for chunk in (1, 2, 3, 4):
        _eval(client, VERDICTS, agentId="support", chunkChars=chunk)
    page = client.get("/api/scores/scorer/eval:support:input", params={"perPage": 2}).json()
    assert page["pagination"] == {"total": 3, "page": 0, "perPage": 2, "hasMore": True}
    second = client.get("/api/scores/scorer/eval:support:input", params={"perPage": 2, "page": 1}).json()
    ids = [r["id"] for r in page["scores"] + second["scores"]]
    assert len(set(ids)) == 3
    created = [r["createdAt"] for r in page["scores"] + second["scores"]]
    assert created == sorted(created, reverse=True)


def test_a_caller_sees_only_the_reports_it_ran(make: Any) -> None:
    client = make(resolve_identity=_users)
    _eval(client, SPANS, {"x-user": "alice"}, agentId="support")
    assert list(client.get("/api/scores/scorers", headers={"x-user": "alice"}).json()) == [
        "eval:support:input"
    ]
    assert client.get("/api/scores/scorers", headers={"x-user": "bob"}).json() == {}
    assert client.get("/api/scores/scorers/eval:support:input", headers={"x-user": "bob"}).json() is None
    bobs = client.get("/api/scores/scorer/eval:support:input", headers={"x-user": "bob"}).json()
    assert bobs["scores"] == [] and bobs["pagination"]["total"] == 0
