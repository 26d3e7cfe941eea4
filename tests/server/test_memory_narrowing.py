"""A request's `memory.options` can only narrow what the agent's `Memory` was configured with:
it can turn features off and make them smaller, never switch on semantic recall or working
memory, pick a vector index, change the template, or make read-only memory writable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request
from tests.memory.memory_testkit import KeywordEmbedder, prompt_texts

from sluicegate import Agent, Sluicegate
from sluicegate.memory import Memory, MemoryConfigurationError, MemoryOptions
from sluicegate.memory.errors import MemoryOptionError
from sluicegate.processors.memory_narrowing import narrow
from sluicegate.server import Identity, ServerSettings, create_app
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step
from sluicegate.vector.sqlite import SQLiteVector


def _tables(path: Path) -> set[str]:
    with apsw.Connection(str(path)) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _bob(request: Request) -> Identity:
    return Identity(resource_id="bob")


@pytest.fixture(params=[False, True], ids=["no-identity", "identity-hook"])
def plain(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[TestClient, Memory, Path]]:
    """An agent whose memory has only message history, with and without an identity hook."""
    path = tmp_path / "memory.db"
    memory = Memory(storage=SQLiteStore(str(path)))
    agent = Agent(name="a", model=MockModel([text_step("ok")] * 50), memory=memory)
    registry = Sluicegate(agents=[agent], resolve_identity=_bob if request.param else None)
    with TestClient(create_app(registry, ServerSettings())) as client:
        yield client, memory, path


def _run(client: TestClient, options: dict[str, Any], **memory: Any) -> Any:
    body = {"messages": "hi", "memory": {"thread": "t1", "resource": "bob", "options": options, **memory}}
    return client.post("/api/agents/a/generate", json=body)


def test_semantic_recall_cannot_be_switched_on(plain: tuple[TestClient, Memory, Path]) -> None:
    """The finding: this loaded the embedder and created vector tables per client-chosen index."""
    client, memory, path = plain
    before = _tables(path)
    for index in range(5):
        response = _run(client, {"semanticRecall": {"topK": 2, "indexName": f"idx_{index}"}})
        assert response.status_code == 400, response.text
        assert response.json()["field"] == "memory.options.semanticRecall"
        assert "not configured" in response.json()["error"]
    assert _run(client, {"semanticRecall": True}).json()["field"] == "memory.options.semanticRecall"
    assert memory._embedder is None and memory._vector is None  # nothing was loaded
    assert _tables(path) == before  # no vector tables


@pytest.mark.parametrize(
    ("options", "memory", "field"),
    [
        ({"workingMemory": {"enabled": True}}, {}, "memory.options.workingMemory.enabled"),
        ({"workingMemory": True}, {}, "memory.options.workingMemory"),
        ({"workingMemory": {"template": "# Mine"}}, {}, "memory.options.workingMemory.template"),
        ({"lastMessages": 11}, {}, "memory.options.lastMessages"),
        ({"lastMessages": None}, {}, "memory.options.lastMessages"),
        ({"lastMessages": 2**70}, {}, "memory.options.lastMessages"),
        ({"lastMessages": "5"}, {}, "memory.options.lastMessages"),
        ({"threads": 1}, {}, "memory.options.threads"),
        ({"readOnly": "yes"}, {}, "memory.options.readOnly"),
    ],
)
def test_widening_or_unknown_options_are_400(
    plain: tuple[TestClient, Memory, Path], options: dict[str, Any], memory: dict[str, Any], field: str
) -> None:
    client, _, _ = plain
    response = _run(client, options, **memory)
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert response.json()["error"].startswith(f"{field}: ")


def test_narrowing_options_apply(plain: tuple[TestClient, Memory, Path]) -> None:
    client, _, _ = plain
    for n in range(3):
        assert _run(client, {}).status_code == 200, n
    model = MockModel([text_step("ok")])
    agent = client.app.state.registry.get_agent("a")  # type: ignore[attr-defined]
    agent.model = model
    narrowed = _run(
        client,
        {"lastMessages": 2, "semanticRecall": False, "workingMemory": {"enabled": False}, "readOnly": True},
    )
    assert narrowed.status_code == 200, narrowed.text
    assert prompt_texts(model.calls[0].prompt) == ["user: hi", "assistant: ok", "user: hi"]
    stored = client.get("/api/memory/threads/t1/messages", params={"resourceId": "bob"}).json()
    assert stored["total"] == 6  # read-only: nothing more stored


@pytest.fixture
def recall(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    """An agent configured with thread-scoped semantic recall and resource-scoped working memory."""
    path = tmp_path / "recall.db"
    memory = Memory(
        storage=SQLiteStore(str(path)),
        vector=SQLiteVector(str(path)),
        embedder=KeywordEmbedder(),
        options={
            "last_messages": 5,
            "semantic_recall": {"top_k": 3, "message_range": {"before": 1, "after": 1}, "scope": "thread"},
            "working_memory": {"enabled": True, "template": "# Notes"},
        },
    )
    agent = Agent(name="a", model=MockModel([text_step("ok")] * 50), memory=memory)
    with TestClient(create_app(Sluicegate(agents=[agent]), ServerSettings())) as client:
        yield client, path


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"semanticRecall": {"indexName": "mine"}}, "memory.options.semanticRecall.indexName"),
        ({"semanticRecall": {"topK": 4}}, "memory.options.semanticRecall.topK"),
        ({"semanticRecall": {"topK": "x"}}, "memory.options.semanticRecall.topK"),
        ({"semanticRecall": {"messageRange": 2}}, "memory.options.semanticRecall.messageRange"),
        ({"semanticRecall": {"scope": "resource"}}, "memory.options.semanticRecall.scope"),
        ({"semanticRecall": {"threshold": "high"}}, "memory.options.semanticRecall.threshold"),
        ({"semanticRecall": {"vectors": 1}}, "memory.options.semanticRecall.vectors"),
        (
            {"workingMemory": {"template": {"format": "json", "content": {}}}},
            "memory.options.workingMemory.template",
        ),
        ({"workingMemory": {"template": 5}}, "memory.options.workingMemory.template"),
        ({"workingMemory": {"scope": "everywhere"}}, "memory.options.workingMemory.scope"),
    ],
)
def test_configured_features_cannot_be_widened(
    recall: tuple[TestClient, Path], options: dict[str, Any], field: str
) -> None:
    client, path = recall
    response = _run(client, options)
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert not any("mine" in table for table in _tables(path))


def test_configured_features_can_be_narrowed(recall: tuple[TestClient, Path]) -> None:
    client, _ = recall
    for options in [
        {"semanticRecall": {"topK": 1, "messageRange": 0, "scope": "thread", "threshold": 0.5}},
        {
            "semanticRecall": True,
            "workingMemory": {"enabled": True, "scope": "thread", "template": "# Notes"},
        },
        {"workingMemory": False, "lastMessages": 0},
    ]:
        assert _run(client, options).status_code == 200, options


def test_read_only_memory_stays_read_only(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStore(str(tmp_path / "m.db")), options={"read_only": True})
    agent = Agent(name="a", model=MockModel([text_step("ok")] * 5), memory=memory)
    with TestClient(create_app(Sluicegate(agents=[agent]), ServerSettings())) as client:
        flag = _run(client, {}, readOnly=False)
        assert flag.status_code == 400 and flag.json()["field"] == "memory.readOnly"
        option = _run(client, {"readOnly": False})
        assert option.status_code == 400 and option.json()["field"] == "memory.options.readOnly"
        assert _run(client, {}, readOnly=True).status_code == 200


def test_a_custom_memory_takes_no_request_options() -> None:
    """Narrowing cannot be judged for a memory that is not `Memory`: options are refused."""

    class Custom:
        async def bind(self, **kwargs: Any) -> Any:
            raise AssertionError("a refused request must not bind")

    agent = Agent(name="a", model=MockModel([text_step("ok")]), memory=Custom())
    with TestClient(create_app(Sluicegate(agents=[agent]), ServerSettings())) as client:
        response = _run(client, {"lastMessages": 1})
    assert response.status_code == 400 and response.json()["field"] == "memory.options"


# ----------------------------------------------------------------------------- the rule itself


def test_narrow_checks_against_the_configuration_not_the_previous_override() -> None:
    configured = MemoryOptions(last_messages=5)
    assert narrow(configured, {"lastMessages": 3, "last_messages": 5}).last_messages == 5
    with pytest.raises(MemoryOptionError) as raised:
        narrow(configured, {"semanticRecall": False, "semantic_recall": True})
    assert raised.value.option == "semantic_recall"


def test_in_process_options_are_type_checked() -> None:
    """Trusted code may widen (`merged`), but a malformed value is a clear error at once."""
    with pytest.raises(MemoryOptionError, match=r"semantic_recall\.top_k"):
        MemoryOptions().merged({"semantic_recall": {"top_k": "three"}})
    with pytest.raises(MemoryOptionError, match=r"working_memory\.template"):
        MemoryOptions().merged({"working_memory": {"enabled": True, "template": 5}})
    with pytest.raises(MemoryConfigurationError, match="template"):
        Memory(options={"working_memory": {"enabled": True, "template": [1]}})
    widened = MemoryOptions().merged({"working_memory": True, "last_messages": 50})
    assert widened.working_memory.enabled and widened.last_messages == 50
