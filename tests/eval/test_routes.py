"""`POST /api/eval` (the studio's eval page): the report as JSON (and HTML on request), and
bad input as a 400 naming the field."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate
from sluicegate.errors import ConfigurationError
from sluicegate.processors import PIIDetector, Processor
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


def test_a_dataset_over_the_example_limit_is_a_413_naming_it() -> None:
    pii = PIIDetector()
    agent = Agent(name="support", model=MockModel([]), input_processors=[pii])
    settings = ServerSettings(studio=True, max_eval_examples=1)
    with TestClient(create_app(Sluicegate(agents=[agent]), settings)) as client:
        response = client.post("/api/eval", json={"dataset": DATASET})
    assert response.status_code == 413, response.text
    assert response.json()["field"] == "dataset"
    assert "2 examples; at most 1" in response.json()["error"]


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_the_example_limit_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="max_eval_examples"):
        ServerSettings(max_eval_examples=bad)  # type: ignore[arg-type]


def test_the_example_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICEGATE_EVAL_MAX_EXAMPLES", "7")
    assert ServerSettings.from_env().max_eval_examples == 7


class _Gate(Processor):
    """Holds every example until `opened` is set, so a second evaluation meets the first."""

    id = "gate"

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()

    async def process_input(self, args: Any) -> Any:
        self.entered.set()
        await self.opened.wait()
        return args.messages


async def test_evaluations_run_one_at_a_time() -> None:
    gate = _Gate()
    agent = Agent(name="support", model=MockModel([]), input_processors=[gate])
    app = create_app(Sluicegate(agents=[agent]), ServerSettings(studio=True))
    dataset = json.dumps({"text": "hello", "expected": "pass"})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        first = asyncio.ensure_future(client.post("/api/eval", json={"dataset": dataset}))
        await asyncio.wait_for(gate.entered.wait(), 10)
        second = await asyncio.wait_for(client.post("/api/eval", json={"dataset": dataset}), 10)
        assert second.status_code == 429, second.text
        assert "already running" in second.json()["error"]
        gate.opened.set()
        assert (await first).status_code == 200
        # The lock is released: the next evaluation runs.
        assert (await client.post("/api/eval", json={"dataset": dataset})).status_code == 200
