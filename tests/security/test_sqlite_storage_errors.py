"""SQLite failures surface as `StorageError`s naming the file and the cause, and a database file
deleted or replaced while a store is open is detected instead of silently losing writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluicegate.errors import StorageError
from sluicegate.storage import SQLiteStore, Thread


async def test_a_missing_directory_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "dir" / "m.db"
    store = SQLiteStore(path)
    with pytest.raises(StorageError) as caught:
        await store.get_thread("t1")
    assert str(path) in str(caught.value) and "CantOpenError" in str(caught.value)
    assert caught.value.__cause__ is not None
    await store.close()


async def test_a_corrupt_file_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    path.write_bytes(b"this is not a database, just some bytes" * 200)
    store = SQLiteStore(path)
    with pytest.raises(StorageError, match=r"not a SQLite database|corrupt"):
        await store.create_thread(Thread(id="t1", resource_id="u1"))
    await store.close()


async def test_a_read_only_database_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    await store.create_thread(Thread(id="t1", resource_id="u1"))
    await store.close()
    store = SQLiteStore(path)
    await store.get_thread("t1")

    def make_read_only(conn: object) -> None:
        conn.execute("PRAGMA query_only = ON")  # type: ignore[attr-defined]

    await store._db.run(make_read_only)
    with pytest.raises(StorageError, match=str(path)):
        await store.create_thread(Thread(id="t2", resource_id="u1"))
    await store.close()


def remove_database_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_database_file_changed_under_an_open_store_is_detected(tmp_path: Path, how: str) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    await store.create_thread(Thread(id="t1", resource_id="u1"))
    remove_database_files(path)
    if how == "replaced":
        other = SQLiteStore(path)
        await other.create_thread(Thread(id="other", resource_id="u2"))
        await other.close()
    with pytest.raises(StorageError, match=how):
        await store.create_thread(Thread(id="t2", resource_id="u1"))
    await store.close()
