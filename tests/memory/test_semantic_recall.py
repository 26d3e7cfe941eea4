"""SemanticRecall through real agent runs, on SQLite + sqlite-vec and PostgreSQL + pgvector."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memory_testkit import KeywordEmbedder, Spy, prompt_texts

from sluicegate import Agent
from sluicegate.embeddings import EmbeddingCache
from sluicegate.memory import Memory
from sluicegate.messages.message import Message
from sluicegate.processors import SemanticRecall
from sluicegate.processors.builtin.semantic_recall import SHARED_EMBEDDING_CACHE
from sluicegate.storage import Thread
from sluicegate.testing import MockModel, text_step

T0 = datetime(2025, 1, 1, 9, 5, tzinfo=UTC)

CONVERSATION = [
    "my cat is called Miso",
    "nice name for a cat",
    "the weather is rainy today",
    "take an umbrella",
    "I am learning the violin",
    "practice scales daily",
]


@pytest.fixture(autouse=True)
def fresh_shared_cache() -> None:
    SHARED_EMBEDDING_CACHE.clear()


@pytest.fixture
def embedder() -> KeywordEmbedder:
    return KeywordEmbedder()


async def remember(
    store: Any,
    vector: Any,
    embedder: Any,
    thread: str,
    texts: list[str],
    *,
    resource: str = "u1",
    start: datetime = T0,
) -> list[Message]:
    """Store and index a past conversation the way a successful run would."""
    await store.create_thread(Thread(id=thread, resource_id=resource))
    messages = [
        Message.text_message(
            "user" if i % 2 == 0 else "assistant",
            text,
            thread_id=thread,  # type: ignore[arg-type]
            resource_id=resource,
            created_at=start + timedelta(minutes=i),
        )
        for i, text in enumerate(texts)
    ]
    await store.save_messages(messages)
    recall = SemanticRecall(storage=store, vector=vector, embedder=embedder, cache=EmbeddingCache())
    await recall._ensure_index()
    vectors = await embedder.embed([m.text for m in messages])
    await vector.upsert(
        recall.index_name,
        vectors,
        [m.id for m in messages],
        [
            {
                "message_id": m.id,
                "thread_id": thread,
                "resource_id": resource,
                "role": m.role,
                "content": m.text,
            }
            for m in messages
        ],
    )
    embedder.calls.clear()
    return messages


def recall_memory(store: Any, vector: Any, embedder: Any, **semantic: Any) -> Memory:
    return Memory(
        storage=store,
        vector=vector,
        embedder=embedder,
        options={"last_messages": False, "semantic_recall": semantic or True},
    )


async def test_recalls_similar_messages_with_their_neighbours(
    store: Any, vector_factory: Any, embedder: KeywordEmbedder
) -> None:
    vector = vector_factory()
    await remember(store, vector, embedder, "t1", CONVERSATION)
    spy = Spy()
    model = MockModel([text_step("ok")])
    memory = recall_memory(
        store, vector, embedder, top_k=1, message_range={"before": 0, "after": 1}, scope="thread"
    )
    await Agent(name="a", model=model, memory=memory, input_processors=[spy]).generate(
        "what is my cat called?", memory={"thread": "t1", "resource": "u1"}
    )
    assert embedder.calls[0] == ["what is my cat called?"]
    assert spy.remembered == ["my cat is called Miso", "nice name for a cat"]
    assert spy.sources["my cat is called Miso"] == "memory"
    assert prompt_texts(model.calls[0].prompt) == [
        "user: my cat is called Miso",
        "assistant: nice name for a cat",
        "user: what is my cat called?",
    ]


async def test_message_range_before_and_top_k(
    store: Any, vector_factory: Any, embedder: KeywordEmbedder
) -> None:
    vector = vector_factory()
    await remember(store, vector, embedder, "t1", CONVERSATION)
    spy = Spy()
    memory = recall_memory(store, vector, embedder, top_k=1, message_range=2, scope="thread")
    await Agent(name="a", model=MockModel([text_step("ok")]), memory=memory, input_processors=[spy]).generate(
        "violin lessons", memory={"thread": "t1", "resource": "u1"}
    )
    assert spy.remembered == CONVERSATION[2:6]
    spy2 = Spy()
    memory = recall_memory(store, vector, embedder, top_k=2, message_range=0, scope="thread")
    await Agent(
        name="a", model=MockModel([text_step("ok")]), memory=memory, input_processors=[spy2]
    ).generate(
        "rainy umbrella weather", memory={"thread": "t1", "resource": "u1", "options": {"read_only": True}}
    )
    assert spy2.remembered == ["the weather is rainy today", "take an umbrella"]


async def test_threshold_drops_weak_matches(
    store: Any, vector_factory: Any, embedder: KeywordEmbedder
) -> None:
    vector = vector_factory()
    await remember(store, vector, embedder, "t1", CONVERSATION)
    loose, strict = Spy(), Spy()
    for spy, threshold in ((loose, 0.0), (strict, 0.99)):
        memory = recall_memory(
            store, vector, embedder, top_k=3, message_range=0, scope="thread", threshold=threshold
        )
        await Agent(
            name="a", model=MockModel([text_step("ok")]), memory=memory, input_processors=[spy]
        ).generate("cat", memory={"thread": "t1", "resource": "u1", "options": {"read_only": True}})
    assert len(loose.remembered) == 3 and strict.remembered == []


async def test_resource_scope_recalls_other_threads_as_a_dated_system_message(
    store: Any, vector_factory: Any, embedder: KeywordEmbedder
) -> None:
    vector = vector_factory()
    await remember(store, vector, embedder, "old", CONVERSATION)
    await remember(store, vector, embedder, "foreign", ["my cat is called Tiger"], resource="u2")
    spy = Spy()
    memory = recall_memory(store, vector, embedder, top_k=1, message_range=0, scope="resource")
    await Agent(name="a", model=MockModel([text_step("ok")]), memory=memory, input_processors=[spy]).generate(
        "my cat is called what?", memory={"thread": "new", "resource": "u1"}
    )
    assert spy.remembered == []
    [system] = [s for s in spy.memory_system if "remembered" in s]
    assert "the following messages are from 2025, Jan, 1" in system
    assert "Message from previous conversation at 9:05 AM: User: my cat is called Miso" in system
    assert "Tiger" not in system


async def test_thread_scope_never_looks_at_other_threads(
    store: Any, vector_factory: Any, embedder: KeywordEmbedder
) -> None:
    vector = vector_factory()
    await remember(store, vector, embedder, "old", CONVERSATION)
    spy = Spy()
    memory = recall_memory(store, vector, embedder, top_k=3, message_range=1, scope="thread")
    await Agent(name="a", model=MockModel([text_step("ok")]), memory=memory, input_processors=[spy]).generate(
        "my cat is called what?", memory={"thread": "new", "resource": "u1"}
    )
    assert spy.remembered == [] and not any("remembered" in s for s in spy.memory_system)


async def test_output_indexes_new_messages_with_metadata(
    store: Any, vector_factory: Any, embedder: KeywordEmbedder
) -> None:
    vector = vector_factory()
    memory = recall_memory(store, vector, embedder)
    agent = Agent(name="a", model=MockModel([text_step("Miso is a lovely cat name")]), memory=memory)
    await agent.generate("my cat is Miso", memory={"thread": "t1", "resource": "u1"})
    recall = SemanticRecall(storage=store, vector=vector, embedder=embedder)
    hits = await vector.query(recall.index_name, KeywordEmbedder.vector("Miso cat"), top_k=5)
    assert {h.metadata["content"] for h in hits} == {"my cat is Miso", "Miso is a lovely cat name"}
    stored = {m.id: m for m in await store.list_messages("t1")}
    for hit in hits:
        meta = hit.metadata
        assert set(meta) == {"message_id", "thread_id", "resource_id", "role", "content", "created_at"}
        assert meta["message_id"] in stored and (meta["thread_id"], meta["resource_id"]) == ("t1", "u1")
        assert meta["role"] == stored[meta["message_id"]].role


async def test_recalled_turns_become_searchable_next_time(
    store: Any, vector_factory: Any, embedder: KeywordEmbedder
) -> None:
    vector = vector_factory()
    memory = recall_memory(store, vector, embedder, top_k=1, message_range=0, scope="thread")
    spy = Spy()
    model = MockModel([text_step("Noted, you play the cello"), text_step("ok")])
    agent = Agent(name="a", model=model, memory=memory, input_processors=[spy])
    await agent.generate("I play the cello", memory={"thread": "t1", "resource": "u1"})
    await agent.generate("which instrument? cello?", memory={"thread": "t1", "resource": "u1"})
    assert spy.remembered and "cello" in spy.remembered[0]


async def test_failed_or_read_only_runs_index_nothing(
    store: Any, vector_factory: Any, embedder: KeywordEmbedder
) -> None:
    vector = vector_factory()
    memory = recall_memory(store, vector, embedder)
    await Agent(name="a", model=MockModel([text_step("ok")]), memory=memory).generate(
        "hello cat", memory={"thread": "t1", "resource": "u1", "options": {"read_only": True}}
    )
    assert embedder.calls == [["hello cat"]]


async def test_embeddings_are_cached(store: Any, vector_factory: Any, embedder: KeywordEmbedder) -> None:
    vector = vector_factory()
    cache = EmbeddingCache(maxsize=10)
    recall = SemanticRecall(storage=store, vector=vector, embedder=embedder, cache=cache, scope="thread")
    model = MockModel([text_step("same answer"), text_step("same answer")])
    agent = Agent(name="a", model=model, input_processors=[recall], output_processors=[recall])
    from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext

    for _ in range(2):
        await agent.generate(
            "same question", request_context=RequestContext({THREAD_ID_KEY: "t1", RESOURCE_ID_KEY: "u1"})
        )
    embedded = [text for call in embedder.calls for text in call]
    assert sorted(embedded) == ["same answer", "same question"]
    assert cache.hits >= 3


async def test_search_errors_do_not_fail_the_run(store: Any, vector_factory: Any) -> None:
    class Broken(KeywordEmbedder):
        async def embed(self, texts: Any) -> list[list[float]]:
            raise RuntimeError("embedding service down")

    memory = recall_memory(store, vector_factory(), Broken())
    result = await Agent(name="a", model=MockModel([text_step("fine")]), memory=memory).generate(
        "hello", memory={"thread": "t1", "resource": "u1"}
    )
    assert result.text == "fine"
    assert [m.text for m in await store.list_messages("t1")] == ["hello", "fine"]


async def test_default_semantic_recall_runs_offline_on_sqlite(tmp_path: Any) -> None:
    from sluicegate.storage import SQLiteStore

    memory = Memory(
        storage=SQLiteStore(tmp_path / "m.db"),
        options={
            "last_messages": False,
            "semantic_recall": {"top_k": 1, "message_range": 0, "scope": "resource"},
        },
    )
    spy = Spy()
    model = MockModel([text_step("Lisbon is lovely"), text_step("ok"), text_step("ok")])
    agent = Agent(name="a", model=model, memory=memory, input_processors=[spy])
    await agent.generate("I moved to Lisbon last spring", memory={"thread": "t1", "resource": "u1"})
    await agent.generate("My favourite fruit is mango", memory={"thread": "t1", "resource": "u1"})
    await agent.generate("Which city do I live in?", memory={"thread": "t1", "resource": "u1"})
    assert spy.remembered == ["I moved to Lisbon last spring"]
    await memory.close()


def test_semantic_recall_on_postgres_needs_a_vector_store() -> None:
    from sluicegate.memory import MemoryConfigurationError
    from sluicegate.storage import PostgresStore

    with pytest.raises(MemoryConfigurationError):
        Memory(storage=PostgresStore("postgresql://localhost/none"), options={"semantic_recall": True})
