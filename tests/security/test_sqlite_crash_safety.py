"""A SQLite file damaged or tampered with under an open store is a `StorageError`, never a
crash: SQLite maps the `-shm` file (and, with `mmap_size`, the database) into memory, and
touching a mapped page that was cut from the file kills the process with SIGBUS. Each case
that could crash runs in a child process, so a regression fails the test instead of killing
the test run."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from sluicegate.errors import StorageError
from sluicegate.storage import SQLiteStore, Thread
from sluicegate.storage.sqlite_files import _MAPPINGS

_PRELUDE = """
import asyncio, os, sys
from sluicegate.errors import StorageError
from sluicegate.storage import SQLiteStore, Thread
from sluicegate.storage.sqlite_files import _MAPPINGS

path = sys.argv[1]
shm, wal = path + "-shm", path + "-wal"


async def fill(store, n=50):
    for i in range(n):
        await store.create_thread(Thread(id=f"t{i}", resource_id="u1", title="x" * 300))


async def attempt(label, call):
    try:
        result = await call
    except StorageError as error:
        print(label, "StorageError", error, flush=True)
        return None
    print(label, "ok", flush=True)
    return result
"""


def run_child(body: str, path: Path) -> subprocess.CompletedProcess[str]:
    script = _PRELUDE + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120, check=False
    )


def assert_exited_normally(child: subprocess.CompletedProcess[str]) -> None:
    assert child.returncode != -signal.SIGBUS, f"killed by SIGBUS:\n{child.stdout}\n{child.stderr}"
    assert child.returncode == 0, f"exit {child.returncode}:\n{child.stdout}\n{child.stderr}"


def test_a_truncated_shm_file_is_a_storage_error_not_sigbus(tmp_path: Path) -> None:
    child = run_child(
        """
        async def main():
            store = SQLiteStore(path)
            await fill(store)
            os.truncate(shm, 0)  # what `open(path + "-shm", "w")` does to a live database
            await attempt("read", store.get_thread("t1"))
            await attempt("write", store.create_thread(Thread(id="new", resource_id="u1")))
            await attempt("read again", store.get_thread("t1"))
            await store.close()
            print("closed", flush=True)

        asyncio.run(main())
        """,
        tmp_path / "m.db",
    )
    assert_exited_normally(child)
    lines = child.stdout.splitlines()
    assert [line.split(" StorageError")[0] for line in lines[:3]] == ["read", "write", "read again"]
    assert all("StorageError" in line and "-shm" in line and "truncated" in line for line in lines[:3])
    assert lines[3] == "closed"


def test_every_store_of_the_process_on_a_truncated_shm_refuses(tmp_path: Path) -> None:
    child = run_child(
        """
        async def main():
            first, second = SQLiteStore(path), SQLiteStore(path)
            await fill(first)
            await second.get_thread("t1")
            os.truncate(shm, 0)
            await attempt("first", first.get_thread("t1"))
            await attempt("second", second.get_thread("t2"))
            third = SQLiteStore(path)  # a new connection would share the cut mapping
            await attempt("third", third.get_thread("t3"))
            for store in (first, second, third):
                await store.close()
            print("closed", flush=True)

        asyncio.run(main())
        """,
        tmp_path / "m.db",
    )
    assert_exited_normally(child)
    lines = child.stdout.splitlines()
    assert [line.split(" ")[:2] for line in lines[:3]] == [
        ["first", "StorageError"],
        ["second", "StorageError"],
        ["third", "StorageError"],
    ]
    assert child.stdout.rstrip().endswith("closed")


def test_closing_a_store_whose_shm_was_truncated_does_not_crash(tmp_path: Path) -> None:
    child = run_child(
        """
        async def main():
            store = SQLiteStore(path)
            await fill(store)
            os.truncate(shm, 0)
            await store.close()  # closing checkpoints, which reads the mapped -shm
            print("closed", flush=True)

        asyncio.run(main())
        """,
        tmp_path / "m.db",
    )
    assert_exited_normally(child)
    assert child.stdout == "closed\n"


def test_a_process_wide_mmap_default_does_not_expose_the_store_to_sigbus(tmp_path: Path) -> None:
    # A SQLite built or configured with memory-mapped I/O on maps the database file itself;
    # cutting the file under the mapping then kills the next read. The store turns it off.
    child = run_child(
        """
        import apsw
        apsw.shutdown()
        apsw.config(apsw.SQLITE_CONFIG_MMAP_SIZE, 2**30, 2**40)
        apsw.initialize()

        async def main():
            store = SQLiteStore(path)
            await fill(store, 200)
            await store._db.run(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
            os.truncate(path, 4096)
            await attempt("read", store.list_threads("u1"))
            await store.close()
            await attempt("reopened", SQLiteStore(path).list_threads("u1"))

        asyncio.run(main())
        """,
        tmp_path / "m.db",
    )
    assert_exited_normally(child)
    assert "reopened StorageError" in child.stdout and "corrupt" in child.stdout


def swap_file(path: Path, *, replace: bool) -> None:
    path.unlink()
    if replace:
        path.write_bytes(b"")


@pytest.mark.parametrize("companion", ["-wal", "-shm"])
@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_wal_or_shm_file_changed_under_an_open_store_is_detected(
    tmp_path: Path, companion: str, how: str
) -> None:
    # A deleted -wal keeps receiving this store's writes in an unlinked file no other
    # connection reads: the writes would be lost. A deleted -shm splits the lock and index
    # state between this process and the next one to open the file.
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    await store.create_thread(Thread(id="t1", resource_id="u1"))
    swap_file(Path(f"{path}{companion}"), replace=how == "replaced")
    with pytest.raises(StorageError, match=rf"{companion}.*{how}"):
        await store.create_thread(Thread(id="t2", resource_id="u1"))
    with pytest.raises(StorageError, match=how):  # and it stays refused
        await store.get_thread("t1")
    await store.close()


async def test_other_stores_opening_and_closing_the_file_are_not_mistaken_for_tampering(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    await store.create_thread(Thread(id="t1", resource_id="u1"))
    for i in range(3):
        other = SQLiteStore(path)
        await other.create_thread(Thread(id=f"o{i}", resource_id="u1", title="y" * 2000))
        await other.close()
    await store._db.run(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
    assert len(await store.list_threads("u1")) == 4
    await store.close()
    reopened = SQLiteStore(path)
    assert len(await reopened.list_threads("u1")) == 4
    await reopened.close()


async def test_what_the_process_knows_of_a_shm_file_goes_with_its_last_store(tmp_path: Path) -> None:
    # Kept while open, so a store opening later still sees a cut; gone after, so a new file
    # that reuses the inode number is not mistaken for the old one. (Only this file's entry is
    # looked at: stores of other tests may still be open in this process.)
    path = tmp_path / "m.db"
    first, second = SQLiteStore(path), SQLiteStore(path)
    await first.create_thread(Thread(id="t1", resource_id="u1"))
    await second.get_thread("t1")
    shm = os.stat(f"{path}-shm")
    key = (shm.st_dev, shm.st_ino)
    assert _MAPPINGS[key].stores == 2
    await first.close()
    assert _MAPPINGS[key].stores == 1
    await second.close()
    assert key not in _MAPPINGS
    never_closed = SQLiteStore(path)
    await never_closed.get_thread("t1")
    shm = os.stat(f"{path}-shm")
    key = (shm.st_dev, shm.st_ino)
    assert _MAPPINGS[key].stores == 1
    del never_closed
    gc.collect()
    assert key not in _MAPPINGS


async def test_a_database_with_damaged_pages_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    for i in range(100):
        await store.create_thread(Thread(id=f"t{i}", resource_id="u1", title="x" * 500))
    await store.close()
    size = path.stat().st_size
    with path.open("r+b") as f:  # keep the header, overwrite every page after the first
        f.seek(4096)
        f.write(bytes((i * 7 + 3) % 256 for i in range(size - 4096)))
    damaged = SQLiteStore(path)
    with pytest.raises(StorageError, match="corrupt"):
        await damaged.list_threads("u1")
    await damaged.close()


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory an unprivileged user may write in (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="sluicegate-ro-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        for child in path.iterdir():
            child.unlink()
        path.rmdir()


@pytest.mark.parametrize("companion", ["-shm", "-wal"])
def test_an_unwritable_shm_or_wal_file_is_refused_at_open(shared_dir: Path, companion: str) -> None:
    # Root may write any file, so the child drops to an unprivileged user when run as root,
    # after a first store run has imported all it needs from the (root-only) interpreter.
    path = shared_dir / "m.db"
    child = run_child(
        f"""
        async def prepare():
            warm = SQLiteStore(path + ".warm")
            await warm.get_thread("t0")
            await warm.close()
            store = SQLiteStore(path)
            await store.create_thread(Thread(id="t1", resource_id="u1"))
            await store.close()

        asyncio.run(prepare())
        for name in (wal, shm):
            open(name, "wb").close()
        for name in (path, wal, shm):
            os.chmod(name, 0o666)
        os.chmod(path + {companion!r}, 0o444)
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)

        async def main():
            store = SQLiteStore(path)
            await attempt("open", store.get_thread("t1"))
            await store.close()

        asyncio.run(main())
        """,
        path,
    )
    assert_exited_normally(child)
    first = child.stdout.splitlines()[0]
    assert first.startswith("open StorageError") and f"m.db{companion}" in first and "not writable" in first
