"""Vector stores for semantic recall: `SQLiteVector` (sqlite-vec, the default) and `PgVector`."""

from sluicegate.vector.base import QueryResult, VectorStore, VectorStoreError
from sluicegate.vector.filter import InvalidFilterError, matches
from sluicegate.vector.postgres import PgVector
from sluicegate.vector.sqlite import SQLiteVector

__all__ = [
    "InvalidFilterError",
    "PgVector",
    "QueryResult",
    "SQLiteVector",
    "VectorStore",
    "VectorStoreError",
    "matches",
]
