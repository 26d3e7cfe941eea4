"""Storage for memory: threads, messages, resources (working memory) and usage records.

Two backends share one interface (`MemoryStore`) and one test suite: `SQLiteStore` (the default,
a file or `":memory:"`) and `PostgresStore` (asyncpg). Both create and migrate their schema on
first use.
"""

from typing import TYPE_CHECKING

from sluicegate._lazy import lazy_attributes
from sluicegate.storage.base import MemoryStore, UsageStore
from sluicegate.storage.errors import MessageWithoutThreadError, StorageError, ThreadNotFoundError
from sluicegate.storage.types import MessageInclude, Resource, Thread

if TYPE_CHECKING:
    from sluicegate.storage.postgres import PostgresStore
    from sluicegate.storage.sqlite import SQLiteStore

# The backends load on first use: PostgresStore needs the `postgres` extra (asyncpg).
__getattr__ = lazy_attributes(__name__, {"PostgresStore": "postgres", "SQLiteStore": "sqlite"})

__all__ = [
    "MemoryStore",
    "MessageInclude",
    "MessageWithoutThreadError",
    "PostgresStore",
    "Resource",
    "SQLiteStore",
    "StorageError",
    "Thread",
    "ThreadNotFoundError",
    "UsageStore",
]
