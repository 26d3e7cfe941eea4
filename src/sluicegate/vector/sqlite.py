"""`SQLiteVector`: vector search in SQLite with the `sqlite-vec` extension (the default).

Each index is a `vec0` table with cosine distance. `resource_id` is its partition key and
`thread_id` a metadata column, so memory's filters run inside the k-nearest-neighbour scan and a
resource's search reads only that resource's vectors; any other filter is applied to the
candidates afterwards, with a full scan when the candidates run out. sqlite-vec stores vectors in
chunks of `chunk_size` per partition: a smaller value saves space for many small resources
(a 384-dimension chunk of 1024 takes 1.5 MB) at some cost in scan speed for large ones.
Calls run on one worker thread per store (see `sluicegate.storage.sqlite.SQLiteConnection`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import apsw

from sluicegate.errors import MissingExtraError

try:
    import numpy as np
    import sqlite_vec
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError(exc.name or "sqlite-vec", extra="vector", feature="SQLiteVector") from exc

from sluicegate.storage.sqlite import SQLiteConnection, fetch_one
from sluicegate.storage.sqlite_transaction import write_transaction
from sluicegate.vector.base import (
    QueryResult,
    VectorStore,
    VectorStoreError,
    above_threshold,
    check_index_name,
    check_query_vector,
    check_upsert,
    vector_owner_error,
)
from sluicegate.vector.filter import Filter, equality_terms, matches, validate

PUSHED_KEYS = frozenset(("thread_id", "resource_id"))
MAX_KNN = 4096
"""sqlite-vec's largest `k`."""


def _setup(conn: apsw.Connection) -> None:
    # A k-NN search reads every vector of the partition: memory-mapped reads avoid a copy per page.
    conn.execute("PRAGMA mmap_size = 4294967296")
    conn.execute("PRAGMA cache_size = -65536")
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)
    write_transaction(
        conn,
        lambda c: c.execute(
            "CREATE TABLE IF NOT EXISTS sluicegate_vector_indexes "
            "(name TEXT PRIMARY KEY, dimension INTEGER NOT NULL, "
            "metric TEXT NOT NULL)"
        ),
    )


def _blob(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


class SQLiteVector(VectorStore):
    """```python
    vector = SQLiteVector("memory.db")      # may share the file with SQLiteStore
    await vector.create_index("docs", 384)
    await vector.upsert("docs", [[...]], ["id1"], [{"thread_id": "t1"}])
    hits = await vector.query("docs", [...], top_k=5, filter={"thread_id": "t1"}, threshold=0.5)
    ```
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        busy_timeout_ms: int = 30_000,
        chunk_size: int = 1024,
    ) -> None:
        self.path = os.fspath(path)
        self.chunk_size = chunk_size
        self._db = SQLiteConnection(self.path, busy_timeout_ms=busy_timeout_ms, setup=_setup)
        self._dimensions: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"SQLiteVector({self.path!r})"

    async def _dimension(self, name: str) -> int:
        check_index_name(name)
        if name not in self._dimensions:
            row = await self._db.run(
                lambda c: c.execute(
                    "SELECT dimension FROM sluicegate_vector_indexes WHERE name = ?", (name,)
                ).fetchone()
            )
            if row is None:
                raise VectorStoreError(f"vector index {name!r} does not exist")
            self._dimensions[name] = int(row[0])
        return self._dimensions[name]

    async def create_index(self, name: str, dimension: int, metric: str = "cosine") -> None:
        check_index_name(name)
        if metric != "cosine":
            raise VectorStoreError(f"SQLiteVector supports the cosine metric only, not {metric!r}")
        if dimension <= 0:
            raise VectorStoreError("dimension must be positive")

        def create(c: apsw.Connection) -> int:
            row = c.execute(
                "SELECT dimension FROM sluicegate_vector_indexes WHERE name = ?", (name,)
            ).fetchone()
            if row is not None:
                return int(row[0])
            c.execute(
                f'CREATE VIRTUAL TABLE "vec_{name}" USING vec0(embedding float[{dimension}] '
                "distance_metric=cosine, resource_id text partition key, thread_id text, +item_id text, "
                f"+metadata text, chunk_size={self.chunk_size})"
            )
            c.execute(
                f'CREATE TABLE "vecid_{name}" (rowid INTEGER PRIMARY KEY, item_id TEXT NOT NULL UNIQUE)'
            )
            c.execute(
                "INSERT INTO sluicegate_vector_indexes (name, dimension, metric) VALUES (?, ?, ?)",
                (name, dimension, metric),
            )
            return dimension

        existing = await self._db.run(lambda c: write_transaction(c, create))
        if existing != dimension:
            raise VectorStoreError(f"vector index {name!r} exists with dimension {existing}, not {dimension}")
        self._dimensions[name] = dimension

    async def list_indexes(self) -> list[str]:
        return await self._db.run(
            lambda c: [r[0] for r in c.execute("SELECT name FROM sluicegate_vector_indexes ORDER BY name")]
        )

    async def describe_index(self, name: str) -> dict[str, Any]:
        dimension = await self._dimension(name)
        count = await self._db.run(
            lambda c: int(fetch_one(c.execute(f'SELECT COUNT(*) FROM "vecid_{name}"'))[0])
        )
        return {"dimension": dimension, "metric": "cosine", "count": count}

    async def delete_index(self, name: str) -> None:
        check_index_name(name)

        def drop(c: apsw.Connection) -> None:
            c.execute(f'DROP TABLE IF EXISTS "vec_{name}"')
            c.execute(f'DROP TABLE IF EXISTS "vecid_{name}"')
            c.execute("DELETE FROM sluicegate_vector_indexes WHERE name = ?", (name,))

        await self._db.run(lambda c: write_transaction(c, drop))
        self._dimensions.pop(name, None)

    async def upsert(
        self,
        name: str,
        vectors: Sequence[Sequence[float]],
        ids: Sequence[str],
        metadata: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[str]:
        dimension = await self._dimension(name)
        check_upsert(vectors, ids, metadata, dimension)
        metas = [dict(m) for m in metadata] if metadata is not None else [{} for _ in ids]
        rows = [
            (
                item_id,
                _blob(vector),
                str(meta.get("thread_id") or ""),
                str(meta.get("resource_id") or ""),
                json.dumps(meta, ensure_ascii=False, default=str),
            )
            for item_id, vector, meta in zip(ids, vectors, metas, strict=True)
        ]

        def save(c: apsw.Connection) -> None:
            for item_id, blob, thread_id, resource_id, meta_json in rows:
                existing = c.execute(
                    f'SELECT rowid FROM "vecid_{name}" WHERE item_id = ?', (item_id,)
                ).fetchone()
                if existing is None:
                    c.execute(f'INSERT INTO "vecid_{name}" (item_id) VALUES (?)', (item_id,))
                    rowid = c.last_insert_rowid()
                else:
                    rowid = existing[0]
                    owner = c.execute(
                        f'SELECT resource_id FROM "vec_{name}" WHERE rowid = ?', (rowid,)
                    ).fetchone()
                    if owner is not None and owner[0] and owner[0] != resource_id:
                        raise vector_owner_error(name, item_id)
                    c.execute(f'DELETE FROM "vec_{name}" WHERE rowid = ?', (rowid,))
                c.execute(
                    f'INSERT INTO "vec_{name}" (rowid, embedding, thread_id, resource_id, item_id, metadata) '
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (rowid, blob, thread_id, resource_id, item_id, meta_json),
                )

        await self._db.run(lambda c: write_transaction(c, save))
        return list(ids)

    async def query(
        self,
        name: str,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        filter: Filter | None = None,
        threshold: float | None = None,
    ) -> list[QueryResult]:
        dimension = await self._dimension(name)
        check_query_vector(vector, dimension)
        validate(filter)
        if top_k <= 0:
            return []
        pushed = {key: value for key, value in equality_terms(filter, PUSHED_KEYS).items() if value}
        residual = bool(filter) and dict(filter or {}) != pushed
        where = "".join(f" AND {key} = ?" for key in pushed)
        blob = _blob(vector)
        k = min(MAX_KNN, max(top_k * 10, 100)) if residual else min(MAX_KNN, top_k)

        def search(c: apsw.Connection) -> list[QueryResult]:
            rows = c.execute(
                f'SELECT item_id, distance, metadata FROM "vec_{name}" '
                f"WHERE embedding MATCH ? AND k = ?{where} "
                "ORDER BY distance",
                (blob, k, *pushed.values()),
            ).fetchall()
            exhausted = len(rows) < k
            results = _results(rows, filter if residual else None)
            if residual and len(results) < top_k and not exhausted:
                # Too few candidates passed the filter: score every row instead.
                rows = c.execute(
                    "SELECT item_id, vec_distance_cosine(embedding, ?) AS distance, metadata "
                    f'FROM "vec_{name}" '
                    f"WHERE 1{where}",
                    (blob, *pushed.values()),
                ).fetchall()
                results = sorted(_results(rows, filter), key=lambda r: -r.score)
            return results

        return above_threshold((await self._db.run(search))[:top_k], threshold)

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        await self._dimension(name)

        def remove(c: apsw.Connection) -> None:
            for item_id in ids:
                row = c.execute(f'SELECT rowid FROM "vecid_{name}" WHERE item_id = ?', (item_id,)).fetchone()
                if row is not None:
                    c.execute(f'DELETE FROM "vec_{name}" WHERE rowid = ?', (row[0],))
                    c.execute(f'DELETE FROM "vecid_{name}" WHERE rowid = ?', (row[0],))

        await self._db.run(lambda c: write_transaction(c, remove))

    async def close(self) -> None:
        await self._db.close()


def _results(rows: list[Any], filter: Filter | None) -> list[QueryResult]:
    results: list[QueryResult] = []
    for item_id, distance, meta_json in rows:
        metadata = json.loads(meta_json) if meta_json else {}
        if filter is None or matches(filter, metadata):
            results.append(QueryResult(id=item_id, score=1.0 - float(distance), metadata=metadata))
    return results
