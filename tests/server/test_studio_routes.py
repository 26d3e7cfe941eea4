"""The server side of the studio's views: an agent's own threads, processor descriptions that say
who decides, and processor workflows described as their graph."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate
from sluicegate.memory import Memory
from sluicegate.processors import PIIDetector, PromptInjectionDetector, RegexFilter, UnicodeNormalizer
from sluicegate.processors.builtin.language_detector import LanguageDetector
from sluicegate.server import ServerSettings, create_app
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel
from sluicegate.workflows import create_step, create_workflow


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[TestClient]:
    """Two agents with memory in one store, and a third registered under a key unlike its id."""
    storage = SQLiteStore(str(tmp_path / "shared.db"))
    sales = Agent(name="sales", model=EchoModel(deltas=1), memory=Memory(storage=storage))
    support = Agent(name="support", model=EchoModel(deltas=1), memory=Memory(storage=storage))
    billing = Agent(
        name="Billing", id="billing-agent", model=EchoModel(deltas=1), memory=Memory(storage=storage)
    )
    registry = Sluicegate(agents={"sales": sales, "support": support, "billing": billing}, storage=storage)
    with TestClient(create_app(registry, ServerSettings())) as client:
        yield client


def _threads(client: TestClient, **params: str) -> list[str]:
    response = client.get("/api/memory/threads", params={"resourceId": "ada", **params})
    assert response.status_code == 200, response.text
    return sorted(t["id"] for t in response.json()["threads"])


def _talk(client: TestClient, agent: str, thread: str) -> None:
    body = {"messages": "hello", "memory": {"thread": thread, "resource": "ada"}}
    assert client.post(f"/api/agents/{agent}/generate", json=body).status_code == 200


def test_threads_list_only_the_agents_own(shared: TestClient) -> None:
    _talk(shared, "sales", "sales-1")
    _talk(shared, "support", "support-1")
    _talk(shared, "billing", "billing-1")
    # One thread made through the API by a client that named no agent: nobody's, listed for all.
    assert (
        shared.post("/api/memory/threads", json={"resourceId": "ada", "threadId": "loose"}).status_code == 200
    )

    assert _threads(shared) == ["billing-1", "loose", "sales-1", "support-1"]
    assert _threads(shared, agentId="sales") == ["loose", "sales-1"]
    assert _threads(shared, agentId="support") == ["loose", "support-1"]
    # The registry key and the agent's own id name the same agent.
    assert _threads(shared, agentId="billing") == ["billing-1", "loose"]
    assert _threads(shared, agentId="billing-agent") == ["billing-1", "loose"]
    thread = shared.get("/api/memory/threads/sales-1", params={"resourceId": "ada"}).json()
    assert thread["metadata"] == {"agentId": "sales"}


def test_a_thread_created_for_an_agent_is_listed_for_it_only(shared: TestClient) -> None:
    created = shared.post(
        "/api/memory/threads", params={"agentId": "support"}, json={"resourceId": "ada", "threadId": "s2"}
    )
    assert created.status_code == 200 and created.json()["metadata"] == {"agentId": "support"}
    assert _threads(shared, agentId="support") == ["s2"]
    assert _threads(shared, agentId="sales") == []
    # Metadata the client sets is kept as given.
    mine = shared.post(
        "/api/memory/threads",
        params={"agentId": "sales"},
        json={"resourceId": "ada", "threadId": "s3", "metadata": {"topic": "refund"}},
    )
    assert mine.json()["metadata"] == {"topic": "refund", "agentId": "sales"}


def test_unknown_agent_is_a_404_naming_it(shared: TestClient) -> None:
    response = shared.get("/api/memory/threads", params={"resourceId": "ada", "agentId": "nobody"})
    assert response.status_code == 404 and "nobody" in response.json()["error"]


def _catalogue(processors: list[Any]) -> dict[str, Any]:
    registry = Sluicegate(processors=processors)
    with TestClient(create_app(registry, ServerSettings())) as client:
        body: dict[str, Any] = client.get("/api/processors").json()
        return body


def test_descriptions_say_an_llm_decides_only_when_one_does() -> None:
    offline = _catalogue(
        [PIIDetector(), PromptInjectionDetector(), LanguageDetector(target_languages=["en"])]
    )
    for pid in ("pii-detector", "prompt-injection-detector", "language-detector"):
        assert "LLM" not in offline[pid]["description"], offline[pid]["description"]
        assert "offline, no model call" in offline[pid]["description"]
    judged = _catalogue([PIIDetector(model=EchoModel()), PromptInjectionDetector(model=EchoModel())])
    assert (
        judged["pii-detector"]["description"]
        == "PII detection and redaction by an LLM, for input and output."
    )
    unsure = _catalogue([PIIDetector(model=EchoModel(), llm="when-unsure")])
    assert "asking an LLM only when" in unsure["pii-detector"]["description"]


def test_workflows_are_described_as_their_graph() -> None:
    pipeline = (
        create_workflow(id="moderation")
        .then(UnicodeNormalizer())
        .parallel([create_step(RegexFilter(presets=["pii"], strategy="redact")), create_step(PIIDetector())])
        .map(lambda data: data["processor:regex-filter"])
        .branch([(lambda data: True, create_step(id="tag", execute=lambda data: data))])
        .commit()
    )
    catalogue = _catalogue([pipeline, UnicodeNormalizer()])
    assert catalogue["unicode-normalizer"]["isWorkflow"] is False
    assert "stepGraph" not in catalogue["unicode-normalizer"]
    described = catalogue["moderation"]
    assert described["isWorkflow"] is True
    assert described["stepGraph"] == [
        {
            "type": "then",
            "steps": [{"id": "unicode-normalizer", "kind": "processor", "processorId": "unicode-normalizer"}],
        },
        {
            "type": "parallel",
            "steps": [
                {"id": "regex-filter", "kind": "processor", "processorId": "regex-filter"},
                {"id": "pii-detector", "kind": "processor", "processorId": "pii-detector"},
            ],
        },
        {"type": "map", "steps": []},
        {"type": "branch", "steps": [{"id": "tag", "kind": "function"}]},
    ]
