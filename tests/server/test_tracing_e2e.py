"""With sluicegate's own tracing present, a served run's timeline holds its real processor
spans: every decision, in order, with the tripwire reason. (Skipped while the tracing package
is absent; tests/server/test_traces.py covers the timeline on hand-made spans.)"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate
from sluicegate.processors import Processor, UnicodeNormalizer
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing.echo_model import EchoModel

pytest.importorskip("sluicegate.tracing")


class Block(Processor):
    id = "block"

    def process_input(self, args: ProcessInputArgs) -> Any:
        if "bad" in args.messages[-1].text:
            args.abort("no bad words")


def _client() -> TestClient:
    agent = Agent(name="guarded", model=EchoModel(deltas=3), input_processors=[UnicodeNormalizer(), Block()])
    return TestClient(create_app(Sluicegate(agents=[agent]), ServerSettings(studio=True)))


@pytest.mark.parametrize("route", ["stream", "generate"])
def test_served_runs_show_their_processor_spans(route: str) -> None:
    with _client() as client:
        passed = client.post(f"/api/agents/guarded/{route}", json={"messages": "hello"})
        blocked = client.post(f"/api/agents/guarded/{route}", json={"messages": "bad thing"})
        views = [
            client.get(f"/api/studio/traces/{r.headers['x-sluicegate-trace-id']}").json()
            for r in (passed, blocked)
        ]
    assert [(d["processorId"], d["outcome"]) for d in views[0]["processors"]] == [
        ("unicode-normalizer", "pass"),
        ("block", "pass"),
    ]
    assert [(d["processorId"], d["outcome"], d["reason"]) for d in views[1]["processors"]] == [
        ("unicode-normalizer", "pass", None),
        ("block", "abort", "no bad words"),
    ]
    names = [s["name"] for s in views[0]["spans"]]
    assert names[0] == f"POST {route} guarded" and "invoke_agent guarded" in names
