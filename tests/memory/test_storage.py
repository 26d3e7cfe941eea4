"""The storage contract, run on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluicegate.messages.message import Message, MessageContent
from sluicegate.messages.part import Part
from sluicegate.storage import (
    MemoryStore,
    MessageInclude,
    MessageWithoutThreadError,
    PostgresStore,
    SQLiteStore,
    Thread,
    ThreadNotFoundError,
)

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def msg(text: str, thread: str = "t1", *, seconds: float = 0, role: str = "user", **kw: Any) -> Message:
    return Message.text_message(
        role,
        text,
        thread_id=thread,
        resource_id="u1",  # type: ignore[arg-type]
        created_at=T0 + timedelta(seconds=seconds),
        **kw,
    )


async def test_thread_lifecycle(store: MemoryStore) -> None:
    assert await store.get_thread("t1") is None
    created = await store.create_thread(Thread(id="t1", resource_id="u1", title="Hello", metadata={"a": 1}))
    assert (created.id, created.resource_id, created.title, created.metadata) == (
        "t1",
        "u1",
        "Hello",
        {"a": 1},
    )
    again = await store.create_thread(Thread(id="t1", resource_id="u2", title="other"))
    assert again.resource_id == "u1" and again.title == "Hello", "create_thread must keep the first owner"
    before = created.updated_at
    await asyncio.sleep(0.002)
    updated = await store.update_thread("t1", metadata={"b": 2})
    assert updated.metadata == {"b": 2} and updated.title == "Hello" and updated.updated_at > before
    fetched = await store.get_thread("t1")
    assert fetched is not None and fetched.metadata == {"b": 2} and fetched.updated_at == updated.updated_at
    await store.create_thread(Thread(id="t2", resource_id="u1"))
    await store.create_thread(Thread(id="t3", resource_id="u9"))
    assert [t.id for t in await store.list_threads("u1")] == ["t2", "t1"] or {
        t.id for t in await store.list_threads("u1")
    } == {"t1", "t2"}
    await store.save_messages([msg("x")])
    await store.delete_thread("t1")
    assert await store.get_thread("t1") is None and await store.count_messages("t1") == 0
    with pytest.raises(ThreadNotFoundError):
        await store.update_thread("missing", title="x")


async def test_messages_round_trip_in_mastra_shape(store: MemoryStore) -> None:
    tool_message = Message(
        role="assistant",
        content=MessageContent(
            parts=[
                Part(type="step-start"),
                Part(
                    type="tool-invocation",
                    toolInvocation={
                        "state": "result",
                        "toolCallId": "c1",
                        "toolName": "w",
                        "args": {"city": "Oslo"},
                        "result": {"t": 3},
                    },
                ),
                Part(type="text", text="It is 3°C ✓"),
            ],
            content="It is 3°C ✓",
            metadata={"k": [1, 2]},
        ),
        thread_id="t1",
        resource_id="u1",
        created_at=T0 + timedelta(microseconds=123456),
    )
    hi = msg("hi")
    await store.save_messages([hi, tool_message])
    loaded = await store.list_messages("t1")
    assert [m.to_dict() for m in loaded] == [hi.to_dict(), tool_message.to_dict()]  # parts' createdAt too
    assert loaded[1].created_at == tool_message.created_at


async def test_save_is_an_upsert_by_id(store: MemoryStore) -> None:
    first = msg("draft")
    await store.save_messages([first])
    first.content = MessageContent(parts=[Part(type="text", text="final")], content="final")
    await store.save_messages([first])
    loaded = await store.list_messages("t1")
    assert [m.text for m in loaded] == ["final"]


async def test_last_messages_are_the_newest_in_chronological_order(store: MemoryStore) -> None:
    await store.save_messages([msg(f"m{i}", seconds=i) for i in reversed(range(10))])
    assert [m.text for m in await store.list_messages("t1", last=3)] == ["m7", "m8", "m9"]
    assert [m.text for m in await store.list_messages("t1")] == [f"m{i}" for i in range(10)]
    assert await store.list_messages("t1", last=0) == []
    assert await store.count_messages("t1") == 10


async def test_same_timestamp_keeps_insertion_order(store: MemoryStore) -> None:
    await store.save_messages([msg(f"m{i}") for i in range(5)])
    assert [m.text for m in await store.list_messages("t1", last=2)] == ["m3", "m4"]


async def test_messages_around_respects_before_after_and_threads(store: MemoryStore) -> None:
    a = [msg(f"a{i}", "ta", seconds=i) for i in range(8)]
    b = [msg(f"b{i}", "tb", seconds=i + 0.5) for i in range(8)]
    await store.save_messages(a + b)
    around = await store.list_messages_around(
        [
            MessageInclude(a[4].id, before=2, after=1),
            MessageInclude(b[0].id, before=3, after=0),
            MessageInclude(a[5].id, before=0, after=0),
            MessageInclude("missing", before=1, after=1),
        ]
    )
    assert [m.text for m in around] == ["b0", "a2", "a3", "a4", "a5"]


async def test_delete_messages(store: MemoryStore) -> None:
    messages = [msg(f"m{i}", seconds=i) for i in range(3)]
    await store.save_messages(messages)
    await store.delete_messages([messages[1].id, "nope"])
    assert [m.text for m in await store.list_messages("t1")] == ["m0", "m2"]


async def test_message_without_thread_is_rejected(store: MemoryStore) -> None:
    with pytest.raises(MessageWithoutThreadError):
        await store.save_messages([Message.text_message("user", "orphan")])


async def test_resources_keep_working_memory(store: MemoryStore) -> None:
    assert await store.get_resource("u1") is None
    created = await store.update_resource("u1", working_memory="# Name: Ada")
    assert created.working_memory == "# Name: Ada" and created.metadata == {}
    kept = await store.update_resource("u1", metadata={"plan": "pro"})
    assert kept.working_memory == "# Name: Ada" and kept.metadata == {"plan": "pro"}
    replaced = await store.update_resource("u1", working_memory="# Name: Grace")
    assert replaced.working_memory == "# Name: Grace" and replaced.metadata == {"plan": "pro"}
    fetched = await store.get_resource("u1")
    assert fetched is not None and fetched.working_memory == "# Name: Grace"


async def test_usage_totals_by_key_and_window(store: MemoryStore) -> None:
    await store.record("u1", 0.5, {"input_tokens": 10, "output_tokens": 5}, T0)
    await store.record("u1", 0.25, {"input_tokens": 1}, T0 + timedelta(hours=1))
    await store.record("u2", 9.0, {}, T0)
    assert await store.total("u1", None) == pytest.approx(0.75)
    assert await store.total("u1", T0 + timedelta(minutes=30)) == pytest.approx(0.25)
    assert await store.total("u1", T0 + timedelta(hours=1)) == pytest.approx(0.25)
    assert await store.total("nobody", None) == 0.0


async def test_schema_migrations_are_automatic_and_idempotent(store_factory: Any) -> None:
    stores = [await store_factory() for _ in range(3)]
    versions = await asyncio.gather(*(s.schema_versions() for s in stores))
    from sluicegate.storage.migrations import POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS

    migrations = POSTGRES_MIGRATIONS if isinstance(stores[0], PostgresStore) else SQLITE_MIGRATIONS
    assert versions == [[m.version for m in migrations]] * 3
    await stores[0].save_messages([msg("persisted")])
    assert [m.text for m in await stores[2].list_messages("t1")] == ["persisted"]


async def test_concurrent_writers_on_one_location_lose_nothing(store_factory: Any) -> None:
    stores = [await store_factory() for _ in range(5)]

    async def write(index: int) -> None:
        store = stores[index % len(stores)]
        for j in range(10):
            await store.save_messages([msg(f"{index}-{j}", f"t{index}", seconds=j)])

    await asyncio.gather(*(write(i) for i in range(20)))
    counts = await asyncio.gather(*(stores[0].count_messages(f"t{i}") for i in range(20)))
    assert counts == [10] * 20


async def test_sqlite_runs_queries_off_the_event_loop_thread(tmp_path: Any) -> None:
    store = SQLiteStore(tmp_path / "x.db")
    seen: list[str] = []
    loop_thread = threading.current_thread().name
    await store._db.run(lambda conn: seen.append(threading.current_thread().name))
    assert seen and seen[0] != loop_thread and seen[0].startswith("sluicegate-sqlite")
    journal = await store._db.run(lambda conn: conn.execute("PRAGMA journal_mode").fetchone()[0])
    assert journal == "wal"
    await store.close()


async def test_sqlite_in_memory_database(tmp_path: Any) -> None:
    async with SQLiteStore(":memory:") as store:
        await store.save_messages([msg("volatile")])
        assert [m.text for m in await store.list_messages("t1")] == ["volatile"]


texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.lists(
        st.tuples(texts, st.sampled_from(["user", "assistant"]), st.integers(min_value=0, max_value=10**9)),
        min_size=1,
        max_size=6,
    )
)
def test_any_text_round_trips_through_sqlite(batch: list[tuple[str, str, int]]) -> None:
    async def check() -> None:
        async with SQLiteStore(":memory:") as store:
            messages = [
                Message.text_message(role, text, thread_id="t", created_at=T0 + timedelta(microseconds=us))  # type: ignore[arg-type]
                for text, role, us in batch
            ]
            await store.save_messages(messages)
            loaded = await store.list_messages("t")
            expected = sorted(messages, key=lambda m: m.created_at)
            assert sorted(m.to_dict()["id"] for m in loaded) == sorted(m.id for m in messages)
            assert [m.created_at for m in loaded] == [m.created_at for m in expected]
            by_id = {m.id: m for m in loaded}
            assert all(by_id[m.id].to_dict() == m.to_dict() for m in messages)

    asyncio.run(check())
