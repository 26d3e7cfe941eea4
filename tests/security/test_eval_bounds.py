"""`POST /api/eval` does not freeze the server (issue 30, finding 3): other requests are answered
while a big evaluation runs, the request timeout stops it, and `processors` and the streamed
chunks are bounded (a clear 4xx naming the field), duplicates run once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from tests.server.live import serve_in_thread

from sluicegate import Agent, Sluicegate
from sluicegate.processors import Processor, RegexFilter
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.eval_routes import MAX_EVAL_PROCESSORS
from sluicegate.testing import MockModel

REGEX = RegexFilter(presets=["pii"], strategy="redact")


class Counting(Processor):
    id = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def process_input(self, args: Any) -> Any:
        self.calls += 1
        return args.messages


def _registry(counting: Counting | None = None) -> Sluicegate:
    agent = Agent(name="support", model=MockModel([]), output_processors=[REGEX])
    return Sluicegate(agents=[agent], processors=[REGEX, counting or Counting()])


def _dataset(examples: int, chars: int) -> str:
    text = ("mail joe@example.com or call 555-0100 now " * (chars // 40 + 1))[:chars]
    return "\n".join(json.dumps({"text": text, "expected": "pass"}) for _ in range(examples))


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(_registry(), ServerSettings())) as client:
        yield client


def test_processors_past_the_bound_are_refused_at_once(client: TestClient) -> None:
    started = time.monotonic()
    body = {"dataset": _dataset(1, 10), "processors": ["regex-filter"] * 50_000}
    answer = client.post("/api/eval", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == "processors"
    assert str(MAX_EVAL_PROCESSORS) in answer.json()["error"]
    assert time.monotonic() - started < 5
    at_bound = client.post("/api/eval", json={**body, "processors": ["regex-filter"] * MAX_EVAL_PROCESSORS})
    assert at_bound.status_code == 200, at_bound.text


def test_a_processor_named_twice_runs_once() -> None:
    counting = Counting()
    with TestClient(create_app(_registry(counting), ServerSettings())) as client:
        body = {"dataset": _dataset(3, 10), "processors": ["counting", "counting", "counting"]}
        answer = client.post("/api/eval", json=body)
    assert answer.status_code == 200, answer.text
    assert counting.calls == 3  # once per example, not three times


def test_the_streamed_chunks_are_bounded(client: TestClient) -> None:
    body = {"dataset": _dataset(1000, 900), "agentId": "support", "phase": "output", "chunkChars": 1}
    answer = client.post("/api/eval", json=body)
    assert answer.status_code == 413, answer.text
    assert answer.json()["field"] == "chunkChars"
    error = answer.json()["error"]
    assert "900,000 chunks" in error and "SLUICEGATE_EVAL_MAX_CHUNKS" in error
    # The input phase streams nothing: the same data is evaluated.
    body = {"dataset": body["dataset"], "processors": ["regex-filter"], "phase": "input", "chunkChars": 1}
    assert client.post("/api/eval", json=body).status_code == 200


def test_other_requests_are_answered_while_an_evaluation_runs() -> None:
    app = create_app(_registry(), ServerSettings())
    body = {"dataset": _dataset(100, 800), "agentId": "support", "phase": "output", "chunkChars": 1}
    outcome: dict[str, Any] = {}
    with serve_in_thread(app) as url:

        def evaluate() -> None:
            started = time.monotonic()
            outcome["answer"] = httpx.post(url + "/api/eval", json=body, timeout=120)
            outcome["seconds"] = time.monotonic() - started

        worker = threading.Thread(target=evaluate)
        worker.start()
        time.sleep(0.3)  # the evaluation is under way (80,000 chunks: seconds of work)
        latencies = []
        while worker.is_alive() and len(latencies) < 10:
            started = time.monotonic()
            assert httpx.get(url + "/api/agents", timeout=60).status_code == 200
            latencies.append(time.monotonic() - started)
            time.sleep(0.05)
        worker.join(120)
    assert outcome["answer"].status_code == 200, outcome["answer"].text
    assert latencies, f"the evaluation ended too soon ({outcome['seconds']:.2f} s) to measure anything"
    assert max(latencies) < 1.0, (latencies, outcome["seconds"])
    assert outcome["seconds"] > max(latencies) * 2  # the requests were answered during it


def test_the_request_timeout_stops_an_evaluation() -> None:
    with TestClient(create_app(_registry(), ServerSettings(request_timeout=0.5))) as client:
        body = {"dataset": _dataset(150, 1000), "agentId": "support", "phase": "output", "chunkChars": 1}
        started = time.monotonic()
        answer = client.post("/api/eval", json=body)
        elapsed = time.monotonic() - started
        assert answer.status_code == 504, answer.text
        assert elapsed < 3, elapsed
        # It stopped: the next evaluation is not refused as "already running".
        small = client.post("/api/eval", json={"dataset": _dataset(1, 10), "processors": ["regex-filter"]})
        assert small.status_code == 200, small.text


def test_one_example_that_repeats_a_value_is_not_quadratic() -> None:
    """Each finding of a repeated value searched the whole text again: 40,000 characters of
    repeated PII took 12 s in `PIIDetector`'s input phase, where no pause can help (one hook)."""
    from sluicegate.processors import PIIDetector

    pii = PIIDetector()
    agent = Agent(name="support", model=MockModel([]), input_processors=[pii])
    with TestClient(create_app(Sluicegate(agents=[agent]), ServerSettings())) as client:
        started = time.monotonic()
        answer = client.post("/api/eval", json={"dataset": _dataset(1, 40_000), "phase": "input"})
        elapsed = time.monotonic() - started
    assert answer.status_code == 200, answer.text
    assert elapsed < 3, elapsed
