"""Semantic recall in durable runs: embeddings and vector store calls are activities."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from temporalio.client import Client
from tests.memory.memory_testkit import KeywordEmbedder

from sluicegate import Agent, Sluicegate
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.errors import ConfigurationError
from sluicegate.memory import Memory
from sluicegate.processors import SemanticRecall
from sluicegate.processors.builtin.semantic_recall import SHARED_EMBEDDING_CACHE
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step
from sluicegate.vector import SQLiteVector

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}


async def _run(
    temporal_server: Any, agents: list[Agent[Any]], body: Callable[[TemporalRuns], Awaitable[Any]]
) -> Any:
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    app = Sluicegate(agents={a.id: a for a in agents})
    # No run cached: every workflow task replays the run, recall and indexing included.
    async with create_worker(client, app, task_queue=queue, max_cached_workflows=0):
        runs = TemporalRuns(client, task_queue=queue, settings=FAST)
        return await asyncio.wait_for(body(runs), 60)


async def _activity_types(runs: TemporalRuns, run_id: str) -> set[str]:
    """Regular activities (scheduled events) and local ones (their markers)."""
    from temporalio.api.common.v1 import Payloads

    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    out: set[str] = set()
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            out.add(e.activity_task_scheduled_event_attributes.activity_type.name)
        if e.HasField("marker_recorded_event_attributes"):
            details = e.marker_recorded_event_attributes.details
            if "data" in details:
                payloads = Payloads()
                payloads.CopyFrom(details["data"])
                for payload in payloads.payloads:
                    data = json.loads(payload.data)
                    if isinstance(data, dict) and "activity_type" in data:
                        out.add(data["activity_type"])
    return out


async def test_semantic_recall_over_two_runs_of_a_thread(temporal_server: Any, tmp_path: Any) -> None:
    SHARED_EMBEDDING_CACHE.clear()
    path = str(tmp_path / "memory.db")
    storage = SQLiteStore(path)
    vector = SQLiteVector(path)
    embedder = KeywordEmbedder()
    memory = Memory(
        storage=storage,
        vector=vector,
        embedder=embedder,
        # No history: what the second run sees of the first comes from the vector search.
        options={
            "last_messages": False,
            "semantic_recall": {"top_k": 1, "message_range": 0, "scope": "thread"},
        },
    )
    model = MockModel([text_step("noted"), text_step("Miso")])
    agent = Agent("recalling", model=model, memory=memory)
    where = {"thread": "t1", "resource": "u1"}

    async def body(runs: TemporalRuns) -> None:
        first = await runs.start(agent, "my cat is called Miso", memory=where)
        assert (await runs.result(first))["text"] == "noted"
        second = await runs.start(agent, "what is my cat called?", memory=where)
        assert (await runs.result(second))["text"] == "Miso"
        prompt = json.dumps(model.calls[1].prompt)
        assert "my cat is called Miso" in prompt  # recalled from the first run
        # Each text was embedded once, however often the runs were replayed.
        embedded = [text for call in embedder.calls for text in call]
        assert sorted(embedded) == sorted(
            ["my cat is called Miso", "noted", "what is my cat called?", "Miso"]
        )
        # Each message indexed once, by its id.
        stored = await storage.list_messages("t1")
        assert len(stored) == 4
        index = (await vector.list_indexes())[0]
        assert (await vector.describe_index(index))["count"] == 4
        hits = await vector.query(index, KeywordEmbedder.vector("my cat is called Miso"), top_k=4)
        assert {h.id for h in hits} == {m.id for m in stored}
        kinds = await _activity_types(runs, second)
        assert {"sluicegate.recalling.embed", "sluicegate.recalling.storage"} <= kinds

    try:
        await _run(temporal_server, [agent], body)
    finally:
        await vector.close()
        await storage.close()


def test_a_semantic_recall_processor_of_its_own_is_refused() -> None:
    storage = SQLiteStore(":memory:")
    recall = SemanticRecall(storage=storage, vector=SQLiteVector(":memory:"), embedder=KeywordEmbedder())
    agent = Agent("own-recall", model=MockModel([]), input_processors=[recall])
    with pytest.raises(ConfigurationError, match=r"'semantic-recall' embeds on its own.*Memory"):
        create_worker(None, Sluicegate(agents={"own-recall": agent}))  # type: ignore[arg-type]


async def test_memory_with_parts_keeps_its_options_and_the_original() -> None:
    from sluicegate.embeddings import EmbeddingCache
    from sluicegate.request_context import RequestContext

    storage, other_storage = SQLiteStore(":memory:"), SQLiteStore(":memory:")
    vector, embedder, other_embedder = SQLiteVector(":memory:"), KeywordEmbedder(), KeywordEmbedder()
    memory = Memory(
        storage=storage, vector=vector, embedder=embedder, options={"semantic_recall": {"top_k": 2}}
    )
    cache = EmbeddingCache()
    copied = memory.with_parts(storage=other_storage, embedder=other_embedder, embedding_cache=cache)
    assert (copied.storage, copied.vector, copied.embedder) == (other_storage, vector, other_embedder)
    assert (memory.storage, memory.embedder, memory.embedding_cache) == (storage, embedder, None)
    binding = await copied.bind(thread_id="t", resource_id="u", request_context=RequestContext())
    [recall] = [p for p in binding.input_processors if isinstance(p, SemanticRecall)]
    assert recall.cache is cache and recall.embedder is other_embedder and recall.top_k == 2
    [shared] = [
        p
        for p in (
            await memory.bind(thread_id="t", resource_id="u", request_context=RequestContext())
        ).input_processors
        if isinstance(p, SemanticRecall)
    ]
    assert shared.cache is SHARED_EMBEDDING_CACHE
    await vector.close()
    await storage.close()
    await other_storage.close()
