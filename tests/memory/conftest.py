"""Fixtures for the memory tests: a real PostgreSQL with pgvector on 127.0.0.1 (see
`memory_pg_server.py`), and store/vector factories that run every test on both backends. Without
PostgreSQL the postgres cases skip, unless SLUICEGATE_REQUIRE_SERVICES=1, when they fail.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from memory_pg_server import PostgresUnavailable, create_database, start_postgres

from sluicegate.storage import MemoryStore, PostgresStore, SQLiteStore

REQUIRE_SERVICES = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """The DSN of a PostgreSQL server (with pgvector) started for this test session."""
    try:
        dsn, stop = start_postgres(in_memory=True)
    except PostgresUnavailable as error:
        if REQUIRE_SERVICES:
            pytest.fail(f"{error} (SLUICEGATE_REQUIRE_SERVICES=1)")
        pytest.skip(str(error))
    try:
        yield dsn
    finally:
        stop()


@pytest.fixture
async def pg_database(postgres_dsn: str) -> str:
    """A fresh, empty database (with the vector extension) on the session's server."""
    return await create_database(postgres_dsn)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store_factory(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """`await make()` opens a store on one shared location (a file or a database) per test."""
    if backend == "postgres":
        location = await create_database(request.getfixturevalue("postgres_dsn"))
    else:
        location = str(tmp_path / "memory.db")
    opened: list[MemoryStore] = []

    async def make() -> MemoryStore:
        store: MemoryStore = PostgresStore(location) if backend == "postgres" else SQLiteStore(location)
        opened.append(store)
        return store

    make.location = location  # type: ignore[attr-defined]
    yield make
    await asyncio.gather(*(s.close() for s in opened))


@pytest.fixture
async def vector_factory(backend: str, store_factory: Any) -> AsyncIterator[Any]:
    """`make()` opens a vector store on the same file/database as `store_factory`'s stores."""
    opened: list[Any] = []

    def make() -> Any:
        from sluicegate.vector import PgVector, SQLiteVector

        location = store_factory.location
        vector = PgVector(location) if backend == "postgres" else SQLiteVector(location)
        opened.append(vector)
        return vector

    yield make
    await asyncio.gather(*(v.close() for v in opened))


@pytest.fixture
async def store(store_factory: Any) -> MemoryStore:
    made: MemoryStore = await store_factory()
    return made
