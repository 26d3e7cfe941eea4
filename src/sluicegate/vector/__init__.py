"""Vector stores for semantic recall: `SQLiteVector` (sqlite-vec, the default) and `PgVector`."""

from typing import TYPE_CHECKING

from sluicegate._lazy import lazy_attributes
from sluicegate.vector.base import QueryResult, VectorStore, VectorStoreError
from sluicegate.vector.filter import InvalidFilterError, matches

if TYPE_CHECKING:
    from sluicegate.vector.postgres import PgVector
    from sluicegate.vector.sqlite import SQLiteVector

# The stores load on first use: SQLiteVector needs the `vector` extra (sqlite-vec, numpy),
# PgVector the `postgres` extra (asyncpg).
__getattr__ = lazy_attributes(__name__, {"PgVector": "postgres", "SQLiteVector": "sqlite"})

__all__ = [
    "InvalidFilterError",
    "PgVector",
    "QueryResult",
    "SQLiteVector",
    "VectorStore",
    "VectorStoreError",
    "matches",
]
