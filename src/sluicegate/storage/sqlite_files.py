"""The files of an open SQLite database, watched for changes made behind the store's back.

In WAL mode SQLite maps the `-shm` file (the WAL index) into memory. Touching a mapped page
that another program cut from the file (a truncation, as `open(path + "-shm", "w")` does) raises
SIGBUS inside SQLite, which kills the whole process; no Python handler can recover from it. A
store therefore looks at its files before every call: once the database, `-wal` or `-shm` file
was deleted or replaced, or the `-shm` file shrank below what SQLite may have mapped, every call
is refused with a `StorageError` and the connection closes without the checkpoint that would read
the mapping. A change that lands while a call is running cannot be seen in time; that window is
the length of one call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sluicegate.storage.errors import StorageError

_SHRUNK_SHM: set[tuple[int, int]] = set()
"""`(device, inode)` of `-shm` files found cut under this process's mappings: every store of the
process on that file refuses, not only the one that noticed."""


@dataclass(slots=True)
class _Seen:
    suffix: str
    device: int
    inode: int
    size: int


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


class DatabaseFiles:
    """The database file and its `-wal` / `-shm` companions, as the store first saw them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: list[_Seen] = []
        self.broken: str | None = None
        """Why the store refuses every call from now on (None while the files are sound)."""

    def require_writable(self) -> None:
        """Before opening: a file this process cannot write would make SQLite fall back to a
        read-only mapping and fail later with a vague I/O error; name it now instead."""
        for suffix in ("", "-wal", "-shm"):
            name = self.path + suffix
            if os.path.exists(name) and not os.access(name, os.W_OK):
                raise StorageError(
                    f"SQLite database {self.path!r}: {name!r} is not writable by this process "
                    "(a store needs to write the database and its -wal and -shm files)"
                )

    def remember(self) -> None:
        """After opening: the identity of each file that exists now."""
        self._seen = []
        for suffix in ("", "-wal", "-shm"):
            st = _stat(self.path + suffix)
            if st is not None:
                self._seen.append(_Seen(suffix, st.st_dev, st.st_ino, st.st_size))

    def check(self) -> None:
        """Raise `StorageError` (for good) when a file was deleted, replaced or cut."""
        if self.broken is None:
            self.broken = self._problem()
        if self.broken is not None:
            raise StorageError(self.broken)

    def note_growth(self) -> None:
        """After a call: the `-shm` file may have grown, and SQLite may map all of it."""
        for seen in self._seen:
            if seen.suffix == "-shm":
                st = _stat(self.path + "-shm")
                if st is not None and (st.st_dev, st.st_ino) == (seen.device, seen.inode):
                    seen.size = max(seen.size, st.st_size)

    def _problem(self) -> str | None:
        for seen in self._seen:
            name = self.path + seen.suffix
            what = "SQLite database" if not seen.suffix else f"the {seen.suffix} file of SQLite database"
            st = _stat(name)
            if st is None:
                return (
                    f"{what} {self.path!r} was deleted while the store was open; nothing more is "
                    "read or written (open a new store)"
                )
            if (st.st_dev, st.st_ino) != (seen.device, seen.inode):
                return (
                    f"{what} {self.path!r} was replaced by another file while the store was open; "
                    "nothing more is read or written (open a new store)"
                )
            if seen.suffix == "-shm":
                key = (st.st_dev, st.st_ino)
                if st.st_size < seen.size:
                    _SHRUNK_SHM.add(key)
                if key in _SHRUNK_SHM:
                    return (
                        f"{what} {self.path!r} ({name!r}) was truncated by another program while "
                        "the store was open; reading it would crash the process, so nothing more is "
                        "read or written (open a new store once no process has the database open)"
                    )
        return None
