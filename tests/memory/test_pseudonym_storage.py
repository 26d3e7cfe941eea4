"""The `sluicegate_pseudonyms` table of both backends: compare-and-swap writes, isolation per
(resource, thread), deletion with the thread, and PIIDetector's sealed mappings on top."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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


async def test_update_applies_a_change_to_the_latest_row_under_its_lock(store: MemoryStore) -> None:
    backend: Any = store
    seen: list[Any] = []

    def append(suffix: bytes) -> Any:
        def change(current: tuple[bytes, int] | None) -> bytes:
            seen.append(current)
            return (b"" if current is None else current[0]) + suffix

        return change

    assert await backend.update_pseudonyms("u1", "t1", append(b"a")) == 1
    assert await backend.update_pseudonyms("u1", "t1", append(b"b")) == 2
    assert seen == [None, (b"a", 1)]
    assert await backend.update_pseudonyms("u1", "t1", lambda current: None) == 2  # kept as it is
    results = await asyncio.gather(*(backend.update_pseudonyms("u1", "t1", append(b"x")) for _ in range(20)))
    assert sorted(results) == list(range(3, 23))  # every change applied, one after the other
    assert await backend.load_pseudonyms("u1", "t1") == (b"ab" + b"x" * 20, 22)
    assert await backend.load_pseudonyms("u2", "t1") is None


async def test_an_update_whose_change_fails_writes_nothing(store: MemoryStore) -> None:
    backend: Any = store
    await backend.save_pseudonyms("u1", "t1", b"kept", 0)

    def broken(current: tuple[bytes, int] | None) -> bytes:
        raise RuntimeError("cannot open it")

    with pytest.raises(RuntimeError, match="cannot open it"):
        await backend.update_pseudonyms("u1", "t1", broken)
    assert await backend.load_pseudonyms("u1", "t1") == (b"kept", 1)
    assert await backend.update_pseudonyms("u1", "t1", lambda current: b"next") == 2  # not left locked


async def test_first_writers_racing_on_separate_connections_all_apply(store_factory: Any) -> None:
    stores = [await store_factory() for _ in range(5)]
    await stores[0].get_thread("warm-up")  # the schema exists before the race

    def append(suffix: bytes) -> Any:
        return lambda current: (b"" if current is None else current[0]) + suffix

    results = await asyncio.gather(
        *(s.update_pseudonyms("u1", "t1", append(str(i).encode())) for i, s in enumerate(stores))
    )
    assert sorted(results) == [1, 2, 3, 4, 5]
    data, version = await stores[0].load_pseudonyms("u1", "t1")
    assert version == 5 and sorted(data.decode()) == ["0", "1", "2", "3", "4"]
