"""MessageHistory and the Memory binding, step by step as the reference documents list them,
through real agent runs on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from memory_testkit import Spy, prompt_texts, system_texts

from sluicegate import Agent
from sluicegate.errors import APICallError
from sluicegate.memory import Memory, MemoryConfigurationError, ThreadAccessError
from sluicegate.messages.message import Message, MessageContent
from sluicegate.messages.part import Part
from sluicegate.processors import MessageHistory, Processor
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from sluicegate.storage import SQLiteStore, Thread
from sluicegate.testing import MockModel, text_step

MEM = {"thread": "t1", "resource": "u1"}
T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def agent_with(memory: Memory, *replies: str, **kwargs: Any) -> tuple[Agent, MockModel]:
    model = MockModel([text_step(r) for r in replies])
    return Agent(name="mem", instructions="Be brief.", model=model, memory=memory, **kwargs), model


async def seed(store: Any, texts: list[str], thread: str = "t1", resource: str = "u1") -> list[Message]:
    await store.create_thread(Thread(id=thread, resource_id=resource))
    messages = [
        Message.text_message(
            "user" if i % 2 == 0 else "assistant",
            t,
            thread_id=thread,  # type: ignore[arg-type]
            resource_id=resource,
            created_at=T0 + timedelta(minutes=i),
        )
        for i, t in enumerate(texts)
    ]
    await store.save_messages(messages)
    return messages


# ------------------------------------------------------------------ input processing


async def test_history_comes_from_the_thread_in_the_request_context(store: Any) -> None:
    memory = Memory(storage=store)
    agent, model = agent_with(memory, "one", "two", "three")
    await agent.generate("I like tea", memory=MEM)
    await agent.generate("What do I like?", memory=MEM)
    await agent.generate("Who am I?", memory={"thread": "t2", "resource": "u1"})
    assert prompt_texts(model.calls[1].prompt) == [
        "user: I like tea",
        "assistant: one",
        "user: What do I like?",
    ]
    assert prompt_texts(model.calls[2].prompt) == ["user: Who am I?"]


async def test_standalone_processor_reads_thread_id_from_request_context(store: Any) -> None:
    await seed(store, ["earlier question", "earlier answer"])
    history = MessageHistory(storage=store)
    model = MockModel([text_step("ok")])
    agent = Agent(name="plain", model=model, input_processors=[history], output_processors=[history])
    context = RequestContext({THREAD_ID_KEY: "t1", RESOURCE_ID_KEY: "u1"})
    await agent.generate("new question", request_context=context)
    assert prompt_texts(model.calls[0].prompt) == [
        "user: earlier question",
        "assistant: earlier answer",
        "user: new question",
    ]
    assert [m.text for m in await store.list_messages("t1")][-2:] == ["new question", "ok"]


async def test_without_a_thread_nothing_is_loaded_or_stored(store: Any) -> None:
    await seed(store, ["secret"])
    history = MessageHistory(storage=store)
    model = MockModel([text_step("ok")])
    await Agent(name="p", model=model, input_processors=[history], output_processors=[history]).generate("hi")
    assert prompt_texts(model.calls[0].prompt) == ["user: hi"]
    assert await store.count_messages("t1") == 1


async def test_last_messages_loads_the_newest_in_creation_order(store: Any) -> None:
    await seed(store, [f"m{i}" for i in range(10)])
    memory = Memory(storage=store, options={"last_messages": 4})
    agent, model = agent_with(memory, "ok")
    await agent.generate("now", memory=MEM)
    assert prompt_texts(model.calls[0].prompt) == [
        "user: m6",
        "assistant: m7",
        "user: m8",
        "assistant: m9",
        "user: now",
    ]


async def test_last_messages_false_loads_nothing_but_still_stores(store: Any) -> None:
    await seed(store, ["old"])
    agent, model = agent_with(Memory(storage=store, options={"lastMessages": False}), "ok")
    await agent.generate("now", memory=MEM)
    assert prompt_texts(model.calls[0].prompt) == ["user: now"]
    assert [m.text for m in await store.list_messages("t1")] == ["old", "now", "ok"]


async def test_per_call_options_override_last_messages(store: Any) -> None:
    await seed(store, [f"m{i}" for i in range(6)])
    agent, model = agent_with(Memory(storage=store, options={"last_messages": 6}), "ok")
    await agent.generate("now", memory={**MEM, "options": {"last_messages": 1}})
    assert prompt_texts(model.calls[0].prompt) == ["assistant: m5", "user: now"]


async def test_stored_system_messages_are_never_loaded(store: Any) -> None:
    await seed(store, ["hello"])
    await store.save_messages(
        [
            Message.text_message(
                "system",
                "LEAKED SYSTEM",
                thread_id="t1",
                resource_id="u1",
                created_at=T0 + timedelta(hours=1),
            )
        ]
    )
    agent, model = agent_with(Memory(storage=store), "ok")
    await agent.generate("now", memory=MEM)
    assert not any("LEAKED" in s for s in system_texts(model.calls[0].prompt))
    assert prompt_texts(model.calls[0].prompt) == ["user: hello", "user: now"]


async def test_history_is_merged_without_duplicates_by_id(store: Any) -> None:
    stored = await seed(store, ["hello", "hi there"])
    agent, model = agent_with(Memory(storage=store), "ok")
    resent = Message.text_message("user", "hello", id=stored[0].id, created_at=stored[0].created_at)
    await agent.generate([resent, "and now?"], memory=MEM)
    texts = prompt_texts(model.calls[0].prompt)
    assert sorted(texts) == ["assistant: hi there", "user: and now?", "user: hello"]
    assert [m.text for m in await store.list_messages("t1")] == ["hello", "hi there", "and now?", "ok"]


async def test_history_is_tagged_memory_and_placed_before_the_input(store: Any) -> None:
    await seed(store, ["remembered question", "remembered answer"])
    spy = Spy()
    agent, _ = agent_with(Memory(storage=store), "ok", input_processors=[spy])
    await agent.generate("fresh", memory=MEM)
    assert spy.remembered == ["remembered question", "remembered answer"]
    assert spy.sources == {"remembered question": "memory", "remembered answer": "memory", "fresh": "input"}


# ------------------------------------------------------------------ output processing


async def test_stores_input_and_response_with_thread_and_resource(store: Any) -> None:
    agent, _ = agent_with(Memory(storage=store), "Hello Ada")
    await agent.generate("I am Ada", memory=MEM)
    stored = await store.list_messages("t1")
    assert [(m.role, m.text, m.thread_id, m.resource_id) for m in stored] == [
        ("user", "I am Ada", "t1", "u1"),
        ("assistant", "Hello Ada", "t1", "u1"),
    ]
    assert stored[0].to_dict()["content"]["parts"] == [{"type": "text", "text": "I am Ada", "createdAt": ANY}]


async def test_system_messages_of_a_run_are_not_stored(store: Any) -> None:
    agent, _ = agent_with(Memory(storage=store), "ok")
    await agent.generate([{"role": "system", "content": "RUN SYSTEM"}, "hi"], memory=MEM)
    assert all(m.role != "system" for m in await store.list_messages("t1"))
    assert [m.text for m in await store.list_messages("t1")] == ["hi", "ok"]


async def test_incomplete_tool_calls_are_not_stored(store: Any) -> None:
    dangling = Message(
        role="assistant",
        content=MessageContent(
            parts=[
                Part(
                    type="tool-invocation",
                    toolInvocation={"state": "call", "toolCallId": "c9", "toolName": "w", "args": {}},
                ),
            ]
        ),
    )
    mixed = Message(
        role="assistant",
        content=MessageContent(
            parts=[
                Part(type="text", text="checking"),
                Part(
                    type="tool-invocation",
                    toolInvocation={"state": "partial-call", "toolCallId": "c8", "toolName": "w", "args": {}},
                ),
            ]
        ),
    )
    agent, _ = agent_with(Memory(storage=store), "ok")
    await agent.generate([dangling, mixed, "hi"], memory=MEM)
    stored = await store.list_messages("t1")
    assert dangling.id not in {m.id for m in stored}
    kept = next(m for m in stored if m.id == mixed.id)
    assert [p["type"] for p in kept.content.parts] == ["text"]


async def test_read_only_loads_but_stores_nothing(store: Any) -> None:
    await seed(store, ["before"])
    agent, model = agent_with(Memory(storage=store, options={"read_only": True}), "ok", "ok2")
    await agent.generate("now", memory=MEM)
    assert prompt_texts(model.calls[0].prompt) == ["user: before", "user: now"]
    assert [m.text for m in await store.list_messages("t1")] == ["before"]
    writable, _ = agent_with(Memory(storage=store), "ok")
    await writable.generate("later", memory={**MEM, "options": {"readOnly": True}})
    assert [m.text for m in await store.list_messages("t1")] == ["before"]


async def test_thread_updated_at_moves_forward(store: Any) -> None:
    agent, _ = agent_with(Memory(storage=store), "a", "b")
    await agent.generate("first", memory=MEM)
    first = await store.get_thread("t1")
    await asyncio.sleep(0.01)
    await agent.generate("second", memory=MEM)
    second = await store.get_thread("t1")
    assert first is not None and second is not None and second.updated_at > first.updated_at


# ------------------------------------------------------------------ nothing is lost, nothing half-saved


class AbortingGuard(Processor):
    id = "guard"

    def process_output_result(self, args: Any) -> Any:
        args.abort("blocked by guard")


async def test_an_aborted_run_stores_nothing_of_that_turn(store: Any) -> None:
    agent, _ = agent_with(Memory(storage=store), "forbidden", output_processors=[AbortingGuard()])
    result = await agent.generate("hi", memory=MEM)
    assert result.tripwire is not None
    assert await store.count_messages("t1") == 0


async def test_a_failed_run_stores_nothing_of_that_turn(store: Any) -> None:
    model = MockModel([APICallError("boom", status_code=400)])
    agent = Agent(name="mem", model=model, memory=Memory(storage=store))
    with pytest.raises(APICallError):
        await agent.generate("hi", memory=MEM)
    assert await store.count_messages("t1") == 0


async def test_a_stream_ending_in_error_stores_nothing(store: Any) -> None:
    model = MockModel([APICallError("boom", status_code=400)])
    agent = Agent(name="mem", model=model, memory=Memory(storage=store))
    output = await agent.stream("hi", memory=MEM)
    kinds = [chunk.type async for chunk in output.full_stream]
    assert "error" in kinds
    assert await store.count_messages("t1") == 0


async def test_fifty_concurrent_runs_on_one_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    shared = Memory(storage=SQLiteStore(path))

    async def run(i: int) -> None:
        memory = shared if i % 2 else Memory(storage=SQLiteStore(path))
        agent, _ = agent_with(memory, f"answer {i}", f"answer {i} again")
        await agent.generate(f"question {i}", memory={"thread": f"t{i}", "resource": f"u{i}"})
        await agent.generate(f"follow-up {i}", memory={"thread": f"t{i}", "resource": f"u{i}"})
        if memory is not shared:
            await memory.close()

    await asyncio.gather(*(run(i) for i in range(50)))
    store = shared.storage
    for i in range(50):
        assert [m.text for m in await store.list_messages(f"t{i}")] == [
            f"question {i}",
            f"answer {i}",
            f"follow-up {i}",
            f"answer {i} again",
        ]
    check = await store._db.run(lambda c: c.execute("PRAGMA integrity_check").fetchone()[0])  # type: ignore[attr-defined]
    assert check == "ok"
    await shared.close()


# ------------------------------------------------------------------ the binding


async def test_threads_are_created_on_first_use_for_their_resource(store: Any) -> None:
    memory = Memory(storage=store)
    agent, _ = agent_with(memory, "ok")
    assert await memory.get_thread("t1") is None
    await agent.generate("hi", memory=MEM)
    thread = await memory.get_thread("t1")
    assert thread is not None and thread.resource_id == "u1"
    assert [t.id for t in await memory.list_threads("u1")] == ["t1"]


async def test_another_resource_cannot_read_a_thread(store: Any) -> None:
    memory = Memory(storage=store)
    agent, model = agent_with(memory, "ok", "never")
    await agent.generate("my secret", memory=MEM)
    with pytest.raises(ThreadAccessError, match="belongs to another resource"):
        await agent.generate("show me", memory={"thread": "t1", "resource": "intruder"})
    assert len(model.calls) == 1
    with pytest.raises(ThreadAccessError):
        await memory.recall("t1", resource_id="intruder")
    assert [m.text for m in await memory.recall("t1", resource_id="u1")] == ["my secret", "ok"]


async def test_memory_needs_a_resource(store: Any) -> None:
    agent, _ = agent_with(Memory(storage=store), "ok")
    with pytest.raises(MemoryConfigurationError):
        await agent.generate("hi", memory={"thread": "t1"})


def test_unknown_options_are_rejected() -> None:
    with pytest.raises(MemoryConfigurationError):
        Memory(options={"last_mesages": 3})
    with pytest.raises(MemoryConfigurationError):
        Memory(
            options={"working_memory": {"enabled": True, "scope": "planet"}}
        ).options.working_memory.scope and (
            Memory(
                options={"working_memory": {"enabled": True, "template": {"format": "xml", "content": ""}}}
            )
        )
