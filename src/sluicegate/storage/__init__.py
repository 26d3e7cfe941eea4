"""Storage for memory: threads, messages, resources (working memory), usage records and
suspended runs.

Two backends share one interface (`MemoryStore`) and one test suite: `SQLiteStore` (the default,
a file or `":memory:"`) and `PostgresStore` (asyncpg). Both create and migrate their schema on
first use. Both are also a `SuspendedRunStore`, as is `InMemorySuspendedRunStore`.
"""

from typing import TYPE_CHECKING

from sluicegate._lazy import lazy_attributes
from sluicegate.storage.base import MemoryStore, UsageStore
from sluicegate.storage.call_counts import CallCountStore, CallReservation, InMemoryCallCountStore
from sluicegate.storage.context_summaries import (
    ContextSummary,
    ContextSummaryStore,
    InMemoryContextSummaryStore,
)
from sluicegate.storage.errors import (
    AmbiguousToolCallError,
    InvalidSuspendedRunError,
    MessageWithoutThreadError,
    SnapshotTooLargeError,
    StorageError,
    SuspendedRunConflictError,
    SuspendedRunError,
    SuspendedRunNotFoundError,
    ThreadNotFoundError,
    ToolCallNotPendingError,
)
from sluicegate.storage.suspended_runs import (
    DEFAULT_MAX_SNAPSHOT_BYTES,
    DEFAULT_SUSPENDED_RUN_TTL,
    InMemorySuspendedRunStore,
    PendingToolCall,
    SuspendedRun,
    SuspendedRunStore,
)
from sluicegate.storage.types import MessageInclude, Resource, Thread

if TYPE_CHECKING:
    from sluicegate.storage.postgres import PostgresStore
    from sluicegate.storage.sqlite import SQLiteStore

# The backends load on first use: PostgresStore needs the `postgres` extra (asyncpg).
__getattr__ = lazy_attributes(__name__, {"PostgresStore": "postgres", "SQLiteStore": "sqlite"})

__all__ = [
    "DEFAULT_MAX_SNAPSHOT_BYTES",
    "DEFAULT_SUSPENDED_RUN_TTL",
    "AmbiguousToolCallError",
    "CallCountStore",
    "CallReservation",
    "ContextSummary",
    "ContextSummaryStore",
    "InMemoryCallCountStore",
    "InMemoryContextSummaryStore",
    "InMemorySuspendedRunStore",
    "InvalidSuspendedRunError",
    "MemoryStore",
    "MessageInclude",
    "MessageWithoutThreadError",
    "PendingToolCall",
    "PostgresStore",
    "Resource",
    "SQLiteStore",
    "SnapshotTooLargeError",
    "StorageError",
    "SuspendedRun",
    "SuspendedRunConflictError",
    "SuspendedRunError",
    "SuspendedRunNotFoundError",
    "SuspendedRunStore",
    "Thread",
    "ThreadNotFoundError",
    "ToolCallNotPendingError",
    "UsageStore",
]
