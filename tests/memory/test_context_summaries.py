"""Conversation summaries of ContextCompactor kept with their thread, on the in-memory store,
SQLite and PostgreSQL: saved and read back with the range they cover, replaced by a later one,
kept apart per resource, removed with their thread, and bad input refused by name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from memory_pg_server import create_database

from sluicegate.storage import (
    ContextSummary,
    ContextSummaryStore,
    InMemoryContextSummaryStore,
    PostgresStore,
    SQLiteStore,
    Thread,
)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def summary_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemoryContextSummaryStore()
        return
    store: Any = (
        SQLiteStore(tmp_path / "summaries.db")
        if request.param == "sqlite"
        else PostgresStore(await create_database(request.getfixturevalue("postgres_dsn")))
    )
    yield store
    await store.close()


def summary(
    text: str = "they talked", *, resource: str = "u1", thread: str = "t1", covered: int = 4
) -> ContextSummary:
    return ContextSummary(
        resource_id=resource,
        thread_id=thread,
        summary=text,
        covered=covered,
        covered_hash="abc",
        first_message_id="m1",
        last_message_id=f"m{covered}",
    )


async def test_a_summary_reads_back_with_its_range_and_a_later_one_replaces_it(
    summary_store: ContextSummaryStore,
) -> None:
    assert await summary_store.load_context_summary("u1", "t1") is None
    await summary_store.save_context_summary(summary())
    first = await summary_store.load_context_summary("u1", "t1")
    assert first is not None and (first.summary, first.covered, first.covered_hash) == (
        "they talked",
        4,
        "abc",
    )
    assert (first.first_message_id, first.last_message_id) == ("m1", "m4")
    await summary_store.save_context_summary(summary("they talked more", covered=9))
    later = await summary_store.load_context_summary("u1", "t1")
    assert later is not None and later.summary == "they talked more" and later.last_message_id == "m9"
    assert await summary_store.load_context_summary("u2", "t1") is None  # another resource's thread


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"resource": ""}, "resource_id"),
        ({"thread": "t" * 2000}, "thread_id"),
        ({"covered": 0}, "cover at least one"),
    ],
)
async def test_bad_summaries_are_refused_by_name(
    summary_store: ContextSummaryStore, bad: dict[str, Any], message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        await summary_store.save_context_summary(summary(**bad))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_deleting_a_thread_deletes_its_summary(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store: Any = (
        SQLiteStore(tmp_path / "s.db")
        if backend == "sqlite"
        else PostgresStore(await create_database(request.getfixturevalue("postgres_dsn")))
    )
    try:
        await store.create_thread(Thread(id="t1", resource_id="u1"))
        await store.save_context_summary(summary())
        await store.delete_thread("t1")
        assert await store.load_context_summary("u1", "t1") is None
    finally:
        await store.close()
