"""Fixtures for the cache tests: a real `redis-server` on 127.0.0.1, and a `cache` fixture that
runs every backend test on both backends (memory and redis).

The server is started once per session on a free port, without persistence, in a temp dir.
Without the `redis-server` binary the Redis variants skip, unless SLUICEGATE_REQUIRE_SERVICES=1,
when they fail.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from sluicegate.cache import InMemoryServerCache, RedisCache, ServerCache

from .redis_server import RedisServer, start_redis


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """The Redis server of this test session."""
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def disposable_redis() -> Iterator[RedisServer]:
    """A Redis server of this test alone, which the test may stop."""
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def cache(backend: str, request: pytest.FixtureRequest) -> AsyncIterator[ServerCache]:
    """An empty cache on the backend under test (a Redis cache gets its own key prefix)."""
    if backend == "memory":
        yield InMemoryServerCache()
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    made = RedisCache(url=server.url, prefix=f"test:{uuid.uuid4().hex}:")
    try:
        yield made
    finally:
        await made.clear()
        await made.close()
