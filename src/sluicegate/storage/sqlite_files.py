"""The files of an open SQLite database, watched for changes made behind the store's back.

In WAL mode SQLite maps the `-shm` file (the WAL index) into memory, once per process for all
its connections to the file. Touching a mapped page that another program cut from the file (a
truncation, as `open(path + "-shm", "w")` does) raises SIGBUS inside SQLite, which kills the
whole process; no Python handler can recover from it. A store therefore looks at its files
before opening and before every call: once the database, `-wal` or `-shm` file was deleted or
replaced, or the `-shm` file shrank below what SQLite may have mapped, every call is refused with
a `StorageError` and the connection closes without the checkpoint that would read the mapping.
A change that lands while a call is running cannot be seen in time; that window is the length
of one call.
"""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass

from sluicegate.storage.errors import StorageError

_SUFFIXES = ("", "-wal", "-shm")


@dataclass(slots=True)
class _Mapping:
    """What this process's stores know of one `-shm` file while any of them has it open."""

    size: int
    """The largest size seen: SQLite may have mapped all of it."""
    stores: int = 0
    cut: bool = False


_MAPPINGS: dict[tuple[int, int], _Mapping] = {}
"""By `(device, inode)`: shared by every store of the process, since SQLite shares the mapping.
An entry goes when its last store closes (the file, held open until then, cannot have its
inode reused meanwhile)."""
_MAPPINGS_LOCK = threading.Lock()  # each store calls from its own worker thread


def _release(key: tuple[int, int]) -> None:
    with _MAPPINGS_LOCK:
        mapping = _MAPPINGS[key]
        mapping.stores -= 1
        if mapping.stores == 0:
            del _MAPPINGS[key]


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


class DatabaseFiles:
    """The database file and its `-wal` / `-shm` companions, as the store first saw them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: dict[str, tuple[int, int]] = {}
        self._shm: tuple[int, int] | None = None
        self._release: weakref.finalize[[tuple[int, int]], DatabaseFiles] | None = None
        self.broken: str | None = None
        """Why the store refuses every call from now on (None while the files are sound)."""

    def before_open(self) -> None:
        """A file this process cannot write would make SQLite fall back to a read-only index
        and fail later with a vague I/O error: name it now. And a `-shm` file another store of
        the process found cut is still mapped: a new connection would read it and crash."""
        for suffix in _SUFFIXES:
            name = self.path + suffix
            if os.path.exists(name) and not os.access(name, os.W_OK):
                raise StorageError(
                    f"SQLite database {self.path!r}: {name!r} is not writable by this process "
                    "(a store needs to write the database and its -wal and -shm files)"
                )
        st = _stat(self.path + "-shm")
        if st is not None:
            with _MAPPINGS_LOCK:
                mapping = _MAPPINGS.get((st.st_dev, st.st_ino))
                if mapping is not None and (mapping.cut or st.st_size < mapping.size):
                    mapping.cut = True
                    raise StorageError(self._cut_message())

    def remember(self) -> None:
        """After opening: the identity of each file that exists now."""
        for suffix in _SUFFIXES:
            st = _stat(self.path + suffix)
            if st is not None:
                self._seen[suffix] = (st.st_dev, st.st_ino)
                if suffix == "-shm":
                    self._shm = (st.st_dev, st.st_ino)
                    with _MAPPINGS_LOCK:
                        mapping = _MAPPINGS.setdefault(self._shm, _Mapping(st.st_size))
                        mapping.stores += 1
                        mapping.size = max(mapping.size, st.st_size)
                    # Released on close, or when a store never closed is collected.
                    self._release = weakref.finalize(self, _release, self._shm)

    def check(self) -> None:
        """Raise `StorageError` (for good) when a file was deleted, replaced or cut."""
        if self.broken is None:
            self.broken = self._problem()
        if self.broken is not None:
            raise StorageError(self.broken)

    def note_growth(self) -> None:
        """After a call: the `-shm` file may have grown, and SQLite may map all of it."""
        if self._shm is None:
            return
        st = _stat(self.path + "-shm")
        if st is not None and (st.st_dev, st.st_ino) == self._shm:
            with _MAPPINGS_LOCK:
                mapping = _MAPPINGS[self._shm]
                mapping.size = max(mapping.size, st.st_size)

    def forget(self) -> None:
        """On close: this store no longer maps the `-shm` file."""
        if self._release is not None:
            self._release()

    def _problem(self) -> str | None:
        for suffix, identity in self._seen.items():
            what = "SQLite database" if not suffix else f"the {suffix} file of SQLite database"
            st = _stat(self.path + suffix)
            if st is None:
                return (
                    f"{what} {self.path!r} was deleted while the store was open; nothing more is "
                    "read or written (open a new store)"
                )
            if (st.st_dev, st.st_ino) != identity:
                return (
                    f"{what} {self.path!r} was replaced by another file while the store was open; "
                    "nothing more is read or written (open a new store)"
                )
            if suffix == "-shm":
                with _MAPPINGS_LOCK:
                    mapping = _MAPPINGS[identity]
                    mapping.cut = mapping.cut or st.st_size < mapping.size
                    if mapping.cut:
                        return self._cut_message()
        return None

    def _cut_message(self) -> str:
        return (
            f"the -shm file of SQLite database {self.path!r} was truncated by another program while "
            "the database was open; reading it would crash the process, so nothing more is read or "
            "written (open a new store once no store of this process has the database open)"
        )
