"""The two things every SQLite table module shares: the store's connection as they see it, and
a write transaction that takes the lock up front (so two writers never deadlock on an upgrade)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import apsw

T = TypeVar("T")


class StoreConnection(Protocol):
    """What `SQLiteStore._db` (a `SQLiteConnection`) offers the table modules: `fn` run on its
    worker thread, and closing."""

    async def run(self, fn: Callable[[apsw.Connection], T]) -> T: ...

    async def close(self) -> None: ...


def write_transaction(conn: apsw.Connection, fn: Callable[[apsw.Connection], T]) -> T:
    """Run `fn` in a transaction that holds the write lock from the start."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result
