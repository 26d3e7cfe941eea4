"""`POST /api/eval` (the studio's eval page): the report as JSON (and HTML on request), and
bad input as a 400 naming the field."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate
from sluicegate.processors import PIIDetector
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing import MockModel

DATASET = "\n".join(
    json.dumps(row)
    for row in [
        {"text": "mail joe.bloggs@example.com", "spans": [{"start": 5, "end": 27, "label": "EMAIL_ADDRESS"}]},
        {"text": "nothing here", "expected": "pass"},
    ]
)


@pytest.fixture
def client() -> Iterator[TestClient]:
    pii = PIIDetector(redaction_method="placeholder")
    agent = Agent(name="support", model=MockModel([]), input_processors=[pii], output_processors=[pii])
    with TestClient(create_app(Sluicegate(agents=[agent]), ServerSettings(studio=True))) as client:
        yield client


def test_eval_returns_the_report_and_the_html(client: TestClient) -> None:
    response = client.post("/api/eval", json={"dataset": DATASET, "agentId": "support", "phase": "output"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["report"]["kinds"]["EMAIL_ADDRESS"]["caught"] == 1
    assert body["report"]["verdicts"]["true_pass"] == 1 and "html" not in body
    page = client.post("/api/eval", json={"dataset": DATASET, "html": True}).json()["html"]
    assert page.startswith("<!doctype html>") and "<svg" in page


@pytest.mark.parametrize(
    ("body", "field", "problem"),
    [
        ({"dataset": '{"text": "x"}'}, "dataset", 'line 1: needs "spans"'),
        ({"dataset": DATASET, "agentId": "nobody"}, "agentId", "no agent 'nobody'"),
        ({"dataset": DATASET, "processors": ["nope"]}, "processors", "no processor 'nope'"),
        ({"dataset": DATASET, "phase": "sideways"}, "phase", ""),
        ({"dataset": DATASET, "chunkChars": 0}, "chunkChars", ""),
        ({"dataset": DATASET, "format": "xml"}, "format", ""),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    client: TestClient, body: dict[str, object], field: str, problem: str
) -> None:
    response = client.post("/api/eval", json=body)
    assert response.status_code == 400, response.text
    data = response.json()
    assert data.get("field") == field or field in data["error"]
    assert problem in data["error"]


def test_the_studio_links_the_eval_page(client: TestClient) -> None:
    page = client.get("/studio").text
    assert "/studio/static/eval.js" in page
    script = client.get("/studio/static/eval.js")
    assert script.status_code == 200 and "sluicegateEvalView" in script.text
    # The nav link is added by the view registry when the eval script is loaded.
    core = client.get("/studio/static/core.js").text
    assert 'registerView("eval", "Eval"' in core
