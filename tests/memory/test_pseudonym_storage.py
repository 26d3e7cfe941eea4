"""The `sluicegate_pseudonyms` table of both backends: compare-and-swap writes, isolation per
(resource, thread), deletion with the thread, and PIIDetector's sealed mappings on top."""

from __future__ import annotations

import asyncio
from typing import Any

from sluicegate.guardrails.pseudonyms import Pseudonymizer, StoragePseudonymStore
from sluicegate.processors import new_pseudonym_key
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from sluicegate.storage import MemoryStore
from sluicegate.storage.types import Thread


async def test_writes_are_compare_and_swap_per_resource_and_thread(store: MemoryStore) -> None:
    backend: Any = store
    assert await backend.load_pseudonyms("u1", "t1") is None
    assert await backend.save_pseudonyms("u1", "t1", b"\x00first", 0)
    assert not await backend.save_pseudonyms("u1", "t1", b"second", 0)  # already there
    assert not await backend.save_pseudonyms("u1", "t1", b"stale", 7)
    assert await backend.save_pseudonyms("u1", "t1", b"second", 1)
    assert await backend.load_pseudonyms("u1", "t1") == (b"second", 2)
    assert await backend.load_pseudonyms("u2", "t1") is None  # another resource, same thread id
    assert await backend.save_pseudonyms("u2", "t1", b"other", 0)
    assert await backend.load_pseudonyms("u1", "t1") == (b"second", 2)


async def test_racing_writers_of_one_version_have_one_winner(store_factory: Any) -> None:
    stores = [await store_factory() for _ in range(4)]
    await stores[0].save_pseudonyms("u1", "t1", b"v1", 0)
    won = await asyncio.gather(
        *(s.save_pseudonyms("u1", "t1", f"w{i}".encode(), 1) for i, s in enumerate(stores))
    )
    assert sorted(won) == [False, False, False, True]
    data, version = await stores[1].load_pseudonyms("u1", "t1")
    assert version == 2 and data == f"w{won.index(True)}".encode()


async def test_deleting_a_thread_deletes_its_mapping(store: MemoryStore) -> None:
    backend: Any = store
    await store.create_thread(Thread(id="t1", resource_id="u1"))
    await backend.save_pseudonyms("u1", "t1", b"sealed", 0)
    await backend.save_pseudonyms("u1", "t2", b"kept", 0)
    await store.delete_thread("t1")
    assert await backend.load_pseudonyms("u1", "t1") is None
    assert await backend.load_pseudonyms("u1", "t2") == (b"kept", 1)


async def test_pseudonymizers_on_one_database_agree_on_tokens(store_factory: Any) -> None:
    key = new_pseudonym_key()
    context = RequestContext()
    context.set(THREAD_ID_KEY, "t1")
    context.set(RESOURCE_ID_KEY, "u1")

    class Args:
        def __init__(self) -> None:
            self.state: dict[str, Any] = {}
            self.request_context = context

    workers = [Pseudonymizer(key=key, store=await store_factory()) for _ in range(3)]
    assert all(isinstance(w.store, StoragePseudonymStore) for w in workers)
    values = [f"user{i}@example.com" for i in range(3)]
    await asyncio.gather(*(w.assign(Args(), [(v, "email")]) for w, v in zip(workers, values, strict=True)))
    final = await workers[0].current(Args())
    assert sorted(final.token(v) or "" for v in values) == ["<EMAIL_1>", "<EMAIL_2>", "<EMAIL_3>"]
    row = await workers[1].store.load(("u1", "t1"))
    assert row is not None and b"example.com" not in row.data
