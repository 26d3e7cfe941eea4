"""Tenancy: no request reaches, overwrites or spends another resource's data, on SQLite and on
PostgreSQL (the `store` fixtures run every test on both)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tenancy_kit import EchoModel

from sluicegate import Agent, RequestContext
from sluicegate.errors import AccessDeniedError, MessageOwnershipError, ProcessorError
from sluicegate.memory import Memory, MemoryConfigurationError, ThreadAccessError
from sluicegate.messages.message import Message
from sluicegate.processors import CostGuardProcessor, MessageHistory, SemanticRecall, WorkingMemory
from sluicegate.processors.builtin.working_memory import create_update_working_memory_tool
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.storage import Thread
from sluicegate.testing import MockModel, text_step
from sluicegate.tools import ToolContext

VICTIM = {"thread": "t-victim", "resource": "victim"}
ATTACKER = {"thread": "t-attacker", "resource": "attacker"}


async def victim_message(store: Any, text: str = "my secret", message_id: str = "m-1") -> Message:
    await store.create_thread(Thread(id="t-victim", resource_id="victim"))
    message = Message.text_message("user", text, id=message_id, thread_id="t-victim", resource_id="victim")
    await store.save_messages([message])
    return message


# ------------------------------------------------------------------ 1. messages belong to their thread


async def test_store_refuses_to_move_a_message_into_another_thread(store: Any) -> None:
    await victim_message(store)
    await store.create_thread(Thread(id="t-attacker", resource_id="attacker"))
    forged = Message.text_message("user", "pwned", id="m-1", thread_id="t-attacker", resource_id="attacker")
    fresh = Message.text_message("user", "hello", id="m-2", thread_id="t-attacker", resource_id="attacker")
    with pytest.raises(MessageOwnershipError) as caught:
        await store.save_messages([fresh, forged])
    assert caught.value.message_id == "m-1"
    [kept] = await store.list_messages("t-victim")
    assert (kept.id, kept.text, kept.thread_id, kept.resource_id) == (
        "m-1",
        "my secret",
        "t-victim",
        "victim",
    )
    assert await store.list_messages("t-attacker") == []  # the whole batch was refused


async def test_store_refuses_a_message_into_a_thread_of_another_resource(store: Any) -> None:
    await victim_message(store)
    planted = Message.text_message("assistant", "planted", thread_id="t-victim", resource_id="attacker")
    with pytest.raises(MessageOwnershipError):
        await store.save_messages([planted])
    assert [m.text for m in await store.list_messages("t-victim")] == ["my secret"]


async def test_store_still_updates_a_message_in_its_own_thread(store: Any) -> None:
    message = await victim_message(store)
    edited = Message.text_message("user", "edited", id=message.id, thread_id="t-victim", resource_id="victim")
    await store.save_messages([edited, edited])
    assert [m.text for m in await store.list_messages("t-victim")] == ["edited"]


async def test_agent_refuses_a_foreign_message_id_before_calling_the_model(store: Any) -> None:
    memory = Memory(storage=store)
    victim_model = EchoModel()
    await Agent(name="a", model=victim_model, memory=memory).generate(
        [{"id": "browser-id-1", "role": "user", "content": "my secret"}], memory=VICTIM
    )
    attacker_model = EchoModel()
    agent = Agent(name="a", model=attacker_model, memory=memory)
    with pytest.raises(MessageOwnershipError):
        await agent.generate([{"id": "browser-id-1", "role": "user", "content": "pwned"}], memory=ATTACKER)
    assert attacker_model.calls == []
    stored = await store.list_messages("t-victim")
    assert (stored[0].id, stored[0].text) == ("browser-id-1", "my secret")
    assert await store.list_messages("t-attacker") == []


async def test_resending_the_conversation_with_its_own_ids_is_fine(store: Any) -> None:
    memory = Memory(storage=store)
    model = EchoModel()
    agent = Agent(name="a", model=model, memory=memory)
    first = [{"id": "c-1", "role": "user", "content": "hello"}]
    await agent.generate(first, memory=VICTIM)
    await agent.generate([*first, {"id": "c-2", "role": "user", "content": "again"}], memory=VICTIM)
    assert [m.id for m in await store.list_messages("t-victim") if m.role == "user"] == ["c-1", "c-2"]


async def test_vector_upsert_cannot_overwrite_another_resources_vector(vector_factory: Any) -> None:
    vector = vector_factory()
    await vector.create_index("idx", 3)
    await vector.upsert("idx", [[1.0, 0.0, 0.0]], ["m-1"], [{"resource_id": "victim", "content": "secret"}])
    with pytest.raises(AccessDeniedError):
        await vector.upsert(
            "idx",
            [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            ["m-new", "m-1"],
            [{"resource_id": "attacker", "content": "new"}, {"resource_id": "attacker", "content": "pwned"}],
        )
    [hit] = await vector.query("idx", [1.0, 0.0, 0.0], top_k=5)
    assert (hit.id, hit.metadata["content"], hit.metadata["resource_id"]) == ("m-1", "secret", "victim")
    await vector.upsert("idx", [[0.0, 1.0, 0.0]], ["m-1"], [{"resource_id": "victim", "content": "v2"}])
    [hit] = await vector.query("idx", [0.0, 1.0, 0.0], top_k=1)
    assert hit.metadata["content"] == "v2"


async def test_working_memory_of_another_resources_thread_is_refused(store: Any) -> None:
    await victim_message(store)
    memory = Memory(storage=store, options={"working_memory": {"enabled": True, "scope": "thread"}})
    await memory.update_working_memory("victim notes", thread_id="t-victim", resource_id="victim")
    with pytest.raises(ThreadAccessError):
        await memory.update_working_memory("pwned", thread_id="t-victim", resource_id="attacker")
    with pytest.raises(ThreadAccessError):
        await memory.get_working_memory(thread_id="t-victim", resource_id="attacker")
    tool = create_update_working_memory_tool(store, scope="thread")
    context = RequestContext({THREAD_ID_KEY: "t-victim", RESOURCE_ID_KEY: "attacker"})
    with pytest.raises(ThreadAccessError):
        await tool.execute({"memory": "pwned"}, ToolContext(tool_call_id="c", request_context=context))
    assert await memory.get_working_memory(thread_id="t-victim", resource_id="victim") == "victim notes"


async def test_usage_settle_cannot_touch_another_keys_record(store: Any) -> None:
    from datetime import UTC, datetime

    held = await store.reserve("resource:victim", 1.5, limit=10.0, since=None, usage={}, at=datetime.now(UTC))
    assert held.id is not None
    await store.settle("resource:attacker", held.id, 0.0, {})
    assert await store.total("resource:victim", None) == pytest.approx(1.5)
    assert await store.total("resource:attacker", None) == 0.0


# ------------------------------------------------------------------ 2. the caller's context is never written


async def test_concurrent_runs_sharing_one_context_keep_their_threads(store: Any) -> None:
    """200 concurrent runs of 20 resources sharing one RequestContext, one agent, one Memory."""
    shared = RequestContext({"tenant": "acme"})
    memory = Memory(storage=store)
    agent = Agent(name="a", model=EchoModel(), memory=memory)

    async def run(i: int) -> None:
        user = f"u{i % 20}"
        await agent.generate(
            f"{user} says {i}", memory={"thread": f"t-{user}", "resource": user}, request_context=shared
        )

    await asyncio.gather(*(run(i) for i in range(200)))
    assert shared.to_dict() == {"tenant": "acme"}
    total = 0
    for r in range(20):
        user = f"u{r}"
        stored = await store.list_messages(f"t-{user}")
        total += len(stored)
        assert len(stored) == 20
        assert all(m.text.split(" ")[0] in (user, "echo:") and f"{user} says" in m.text for m in stored)
        assert all(m.resource_id == user for m in stored)
        assert [t.id for t in await store.list_threads(user)] == [f"t-{user}"]
    assert total == 400


async def test_cost_guard_charges_each_runs_own_resource_with_a_shared_context(store: Any) -> None:
    shared = RequestContext()
    guard = CostGuardProcessor(
        max_cost=10_000.0, scope="resource", store=store, pricing={"echo-model": {"input": 0, "output": 1e6}}
    )
    agent = Agent(
        name="a", model=EchoModel(output_tokens=1), memory=Memory(storage=store), input_processors=[guard]
    )
    await asyncio.gather(
        *(
            agent.generate("hi", memory={"thread": f"t-{u}", "resource": u}, request_context=shared)
            for u in ("u1", "u2", "u2")
        )
    )
    assert await store.total("resource:u1", None) == pytest.approx(1.0)
    assert await store.total("resource:u2", None) == pytest.approx(2.0)
    assert shared.to_dict() == {}


# ------------------------------------------------------------------ 3. hand-placed processors check ownership


@pytest.mark.parametrize("kind", ["history", "recall", "working"])
async def test_hand_placed_processor_refuses_another_resources_thread(
    store: Any, vector_factory: Any, kind: str
) -> None:
    from memory_testkit import KeywordEmbedder

    await victim_message(store)
    processor: Any
    if kind == "history":
        processor = MessageHistory(storage=store)
    elif kind == "recall":
        processor = SemanticRecall(storage=store, vector=vector_factory(), embedder=KeywordEmbedder())
    else:
        processor = WorkingMemory(storage=store, scope="thread")
    model = MockModel([text_step("ok")])
    agent = Agent(name="a", model=model, input_processors=[processor], output_processors=[processor])
    context = RequestContext({THREAD_ID_KEY: "t-victim", RESOURCE_ID_KEY: "attacker"})
    with pytest.raises(ThreadAccessError):
        await agent.generate("my secret?", request_context=context)
    assert model.calls == []
    with pytest.raises(ProcessorError) as caught:  # a configuration error, reported by the processor
        await agent.generate("no resource", request_context=RequestContext({THREAD_ID_KEY: "t-victim"}))
    assert isinstance(caught.value.__cause__, MemoryConfigurationError)
    assert model.calls == []
    assert [m.text for m in await store.list_messages("t-victim")] == ["my secret"]


async def test_hand_placed_history_creates_the_thread_for_its_resource(store: Any) -> None:
    history = MessageHistory(storage=store)
    agent = Agent(name="a", model=EchoModel(), input_processors=[history], output_processors=[history])
    await agent.generate(
        "hi", request_context=RequestContext({THREAD_ID_KEY: "t-new", RESOURCE_ID_KEY: "u1"})
    )
    thread = await store.get_thread("t-new")
    assert thread is not None and thread.resource_id == "u1"
    with pytest.raises(ThreadAccessError):
        await agent.generate(
            "hi", request_context=RequestContext({THREAD_ID_KEY: "t-new", RESOURCE_ID_KEY: "u2"})
        )


async def test_a_thread_budget_is_not_spent_by_another_resource(store: Any) -> None:
    await victim_message(store)
    guard = CostGuardProcessor(max_cost=5.0, scope="thread", store=store)
    model = EchoModel()
    agent = Agent(name="a", model=model, input_processors=[guard])
    context = RequestContext({THREAD_ID_KEY: "t-victim", RESOURCE_ID_KEY: "attacker"})
    with pytest.raises(ThreadAccessError):
        await agent.generate("spend it", request_context=context)
    assert model.calls == [] and await store.total("thread:t-victim", None) == 0.0
    await agent.generate(
        "mine", request_context=RequestContext({THREAD_ID_KEY: "t-victim", RESOURCE_ID_KEY: "victim"})
    )
    assert len(model.calls) == 1
