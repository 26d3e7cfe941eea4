"""The `ServerCache` contract, on both backends; then what is specific to each."""

from __future__ import annotations

import asyncio
import math
import uuid
from typing import Any

import pytest
import redis.asyncio
import redis.exceptions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluicegate.cache import InMemoryServerCache, RedisCache, ServerCache

from .redis_server import RedisServer, free_port

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)

# ------------------------------------------------------------------ the contract, on both backends


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=json_values)
async def test_a_json_value_reads_back_equal(cache: ServerCache, value: Any) -> None:
    key = uuid.uuid4().hex
    await cache.set(key, value)
    assert await cache.get(key) == value


async def test_a_missing_key_reads_as_none(cache: ServerCache) -> None:
    assert await cache.get("never-written") is None


async def test_set_overwrites(cache: ServerCache) -> None:
    await cache.set("k", {"v": 1})
    await cache.set("k", {"v": 2})
    assert await cache.get("k") == {"v": 2}


async def test_delete_removes_and_says_whether_the_key_was_there(cache: ServerCache) -> None:
    await cache.set("k", 1)
    assert await cache.delete("k") is True
    assert await cache.get("k") is None
    assert await cache.delete("k") is False


async def test_clear_removes_every_entry(cache: ServerCache) -> None:
    for i in range(5):
        await cache.set(f"k{i}", i)
    await cache.clear()
    assert [await cache.get(f"k{i}") for i in range(5)] == [None] * 5


async def test_an_entry_expires_after_its_ttl(cache: ServerCache) -> None:
    await cache.set("short", "v", ttl=0.2)
    await cache.set("long", "v", ttl=30)
    assert await cache.get("short") == "v"
    await asyncio.sleep(0.35)
    assert await cache.get("short") is None
    assert await cache.get("long") == "v"


@pytest.mark.parametrize("ttl", [0, -1, math.nan, math.inf, True, "10"])
async def test_a_ttl_that_is_not_a_positive_number_is_rejected(cache: ServerCache, ttl: Any) -> None:
    with pytest.raises(ValueError, match="ttl"):
        await cache.set("k", 1, ttl=ttl)
    assert await cache.get("k") is None


@pytest.mark.parametrize("value", [object(), {1, 2}, {"nested": b"bytes"}, math.nan])
async def test_a_value_json_cannot_hold_is_rejected_and_nothing_is_stored(
    cache: ServerCache, value: Any
) -> None:
    with pytest.raises((TypeError, ValueError)):
        await cache.set("k", value)
    assert await cache.get("k") is None


async def test_entries_are_copies_neither_writer_nor_reader_can_change_them(cache: ServerCache) -> None:
    value = {"chunks": [{"text": "a"}]}
    await cache.set("k", value)
    value["chunks"].append({"text": "written after set"})
    read = await cache.get("k")
    read["chunks"][0]["text"] = "changed by a reader"
    assert await cache.get("k") == {"chunks": [{"text": "a"}]}


# ------------------------------------------------------------------ InMemoryServerCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_memory_evicts_the_least_recently_used_entry_beyond_max_entries() -> None:
    cache = InMemoryServerCache(max_entries=2)
    await cache.set("a", 1)
    await cache.set("b", 2)
    assert await cache.get("a") == 1  # "a" is now more recent than "b"
    await cache.set("c", 3)
    assert len(cache) == 2
    assert await cache.get("b") is None
    assert await cache.get("a") == 1
    assert await cache.get("c") == 3


async def test_memory_overwriting_a_key_does_not_evict_another() -> None:
    cache = InMemoryServerCache(max_entries=2)
    await cache.set("a", 1)
    await cache.set("b", 2)
    await cache.set("a", 10)
    assert (await cache.get("a"), await cache.get("b")) == (10, 2)


@settings(max_examples=60, deadline=None)
@given(
    max_entries=st.integers(1, 4),
    ops=st.lists(
        st.tuples(st.sampled_from(["set", "get", "delete"]), st.sampled_from("abcdef")), max_size=40
    ),
)
def test_memory_behaves_like_a_reference_lru(max_entries: int, ops: list[tuple[str, str]]) -> None:
    async def check() -> None:
        cache = InMemoryServerCache(max_entries=max_entries)
        model: list[tuple[str, int]] = []  # least to most recently used
        for step, (op, key) in enumerate(ops):
            held = dict(model)
            if op == "set":
                await cache.set(key, step)
                model = [(k, v) for k, v in model if k != key] + [(key, step)]
                model = model[-max_entries:]
            elif op == "get":
                assert await cache.get(key) == held.get(key)
                if key in held:
                    model = [(k, v) for k, v in model if k != key] + [(key, held[key])]
            else:
                assert await cache.delete(key) is (key in held)
                model = [(k, v) for k, v in model if k != key]
            assert len(cache) == len(model)

    asyncio.run(check())


async def test_memory_ttl_follows_the_injected_clock_and_none_never_expires() -> None:
    clock = FakeClock()
    cache = InMemoryServerCache(clock=clock)
    await cache.set("ttl", "v", ttl=10)
    await cache.set("forever", "v")
    clock.now += 9.99
    assert await cache.get("ttl") == "v"
    clock.now += 0.01
    assert await cache.get("ttl") is None
    assert len(cache) == 1  # the expired entry was dropped when read
    clock.now += 10**9
    assert await cache.get("forever") == "v"


@pytest.mark.parametrize("max_entries", [0, -1, 1.5, True])
def test_memory_max_entries_must_be_a_positive_integer(max_entries: Any) -> None:
    with pytest.raises(ValueError, match="max_entries"):
        InMemoryServerCache(max_entries=max_entries)


# ------------------------------------------------------------------ RedisCache


async def test_redis_stores_json_under_the_prefix_with_a_millisecond_ttl(redis_server: RedisServer) -> None:
    prefix = f"p:{uuid.uuid4().hex}:"
    cache = RedisCache(url=redis_server.url, prefix=prefix)
    raw = redis.asyncio.Redis.from_url(redis_server.url)
    try:
        await cache.set("k", {"a": [1, "é"]}, ttl=1.5)
        await cache.set("forever", 1)
        assert await raw.get(prefix + "k") == '{"a":[1,"é"]}'.encode()
        assert 1000 < await raw.pttl(prefix + "k") <= 1500
        assert await raw.pttl(prefix + "forever") == -1
    finally:
        await cache.clear()
        await cache.close()
        await raw.aclose()


async def test_redis_clear_leaves_keys_outside_its_prefix_alone(redis_server: RedisServer) -> None:
    # A prefix with glob characters must not match other keys either.
    prefix = f"g[{uuid.uuid4().hex[:6]}]*:"
    cache = RedisCache(url=redis_server.url, prefix=prefix, scan_batch=2)
    neighbour = RedisCache(url=redis_server.url, prefix=prefix.replace("*", "x"))
    try:
        for i in range(5):
            await cache.set(f"k{i}", i)
        await neighbour.set("k0", "keep")
        await cache.clear()
        assert [await cache.get(f"k{i}") for i in range(5)] == [None] * 5
        assert await neighbour.get("k0") == "keep"
    finally:
        await neighbour.clear()
        await cache.close()
        await neighbour.close()


def test_redis_works_across_event_loops(redis_server: RedisServer) -> None:
    cache = RedisCache(url=redis_server.url, prefix=f"loops:{uuid.uuid4().hex}:")
    asyncio.run(cache.set("k", "from the first loop"))
    assert asyncio.run(cache.get("k")) == "from the first loop"

    async def finish() -> None:
        await cache.clear()
        await cache.close()

    asyncio.run(finish())


async def test_redis_uses_a_client_passed_in_and_leaves_it_open(redis_server: RedisServer) -> None:
    client = redis.asyncio.Redis.from_url(redis_server.url)
    cache = RedisCache(client=client, prefix=f"own:{uuid.uuid4().hex}:")
    await cache.set("k", 1)
    await cache.close()
    assert await client.ping()
    assert await client.get(cache.prefix + "k") == b"1"
    await client.delete(cache.prefix + "k")
    await client.aclose()


async def test_redis_that_is_down_raises_a_connection_error_quickly() -> None:
    cache = RedisCache(url=f"redis://127.0.0.1:{free_port()}/0")
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(redis.exceptions.ConnectionError):
        await cache.get("k")
    assert loop.time() - started < 5
    await cache.close()


def test_redis_repr_hides_the_password() -> None:
    text = repr(RedisCache(url="redis://user:s3cret@cache.internal:6379/0"))
    assert "s3cret" not in text
    assert "user:***@cache.internal:6379/0" in text
    assert "redis://localhost:6379/0" in repr(RedisCache())


def test_both_backends_are_server_caches() -> None:
    assert isinstance(InMemoryServerCache(), ServerCache)
    assert isinstance(RedisCache(), ServerCache)
