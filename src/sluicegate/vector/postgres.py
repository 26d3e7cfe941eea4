"""`PgVector`: vector search in PostgreSQL with the pgvector extension.

Each index is a table `(id, embedding vector(n), metadata jsonb)` with an HNSW cosine index and
expression indexes on `thread_id` / `resource_id`. Filters compile to SQL over the metadata
(`sluicegate.vector.filter.to_postgres`). With pgvector 0.8+, filtered HNSW scans are iterative
so a selective filter still returns `top_k` rows.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from sluicegate.errors import MissingExtraError

try:
    import asyncpg
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("asyncpg", extra="postgres", feature="PgVector") from exc

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
from sluicegate.vector.filter import Filter, to_postgres


def _literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


class PgVector(VectorStore):
    """```python
    vector = PgVector("postgresql://user:pass@localhost/app")
    memory = Memory(storage=PostgresStore(dsn), vector=vector, embedder=OpenAIEmbedder())
    ```
    """

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 10, ef_search: int = 100) -> None:
        self.dsn = dsn
        self.ef_search = ef_search
        self._min_size = min_size
        self._max_size = max_size
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()
        self._iterative_scan = False
        self._dimensions: dict[str, int] = {}

    def __repr__(self) -> str:
        return "PgVector(...)"

    async def pool(self) -> asyncpg.Pool:
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is None:
                pool = await asyncpg.create_pool(
                    self.dsn, min_size=self._min_size, max_size=self._max_size, init=_init_connection
                )
                async with pool.acquire() as conn:
                    if not await conn.fetchval("SELECT 1 FROM pg_extension WHERE extname = 'vector'"):
                        try:
                            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                        except asyncpg.PostgresError as error:
                            raise VectorStoreError(
                                f"PgVector needs the pgvector extension: {error}"
                            ) from error
                    version = await conn.fetchval(
                        "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                    )
                    self._iterative_scan = tuple(int(p) for p in str(version).split(".")[:2]) >= (0, 8)
                    await conn.execute(
                        "CREATE TABLE IF NOT EXISTS sluicegate_vector_indexes (name TEXT PRIMARY KEY, "
                        "dimension INTEGER NOT NULL, metric TEXT NOT NULL)"
                    )
                self._pool = pool
        return self._pool

    async def _dimension(self, name: str) -> int:
        check_index_name(name)
        if name not in self._dimensions:
            pool = await self.pool()
            value = await pool.fetchval(
                "SELECT dimension FROM sluicegate_vector_indexes WHERE name = $1", name
            )
            if value is None:
                raise VectorStoreError(f"vector index {name!r} does not exist")
            self._dimensions[name] = int(value)
        return self._dimensions[name]

    async def create_index(self, name: str, dimension: int, metric: str = "cosine") -> None:
        check_index_name(name)
        if metric != "cosine":
            raise VectorStoreError(f"PgVector indexes here use the cosine metric, not {metric!r}")
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"sluicegate_vector:{name}")
            existing = await conn.fetchval(
                "SELECT dimension FROM sluicegate_vector_indexes WHERE name = $1", name
            )
            if existing is None:
                await conn.execute(
                    f'CREATE TABLE "{name}" (id TEXT PRIMARY KEY, embedding vector({int(dimension)}) '
                    "NOT NULL, metadata JSONB NOT NULL DEFAULT '{}')"
                )
                await conn.execute(
                    f'CREATE INDEX "{name}_hnsw" ON "{name}" USING hnsw (embedding vector_cosine_ops)'
                )
                await conn.execute(f'CREATE INDEX "{name}_thread" ON "{name}" ((metadata->>\'thread_id\'))')
                await conn.execute(
                    f'CREATE INDEX "{name}_resource" ON "{name}" ((metadata->>\'resource_id\'))'
                )
                await conn.execute(
                    "INSERT INTO sluicegate_vector_indexes (name, dimension, metric) VALUES ($1, $2, $3)",
                    name,
                    dimension,
                    metric,
                )
                existing = dimension
        if existing != dimension:
            raise VectorStoreError(f"vector index {name!r} exists with dimension {existing}, not {dimension}")
        self._dimensions[name] = dimension

    async def list_indexes(self) -> list[str]:
        pool = await self.pool()
        return [r[0] for r in await pool.fetch("SELECT name FROM sluicegate_vector_indexes ORDER BY name")]

    async def describe_index(self, name: str) -> dict[str, Any]:
        dimension = await self._dimension(name)
        pool = await self.pool()
        count = await pool.fetchval(f'SELECT COUNT(*) FROM "{name}"')
        return {"dimension": dimension, "metric": "cosine", "count": int(count)}

    async def delete_index(self, name: str) -> None:
        check_index_name(name)
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            await conn.execute("DELETE FROM sluicegate_vector_indexes WHERE name = $1", name)
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
        latest = {i: (v, m) for i, v, m in zip(ids, vectors, metas, strict=True)}
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction():
            # A vector stays with the resource that wrote it: an upsert from another resource is
            # not applied (the WHERE guard), misses RETURNING, and refuses the whole batch.
            written = await conn.fetch(
                f'INSERT INTO "{name}" AS v (id, embedding, metadata) '
                "SELECT i, e::vector, m::jsonb FROM unnest($1::text[], $2::text[], $3::text[]) AS x(i, e, m) "
                "ON CONFLICT (id) DO UPDATE SET embedding = EXCLUDED.embedding, metadata = EXCLUDED.metadata "
                "WHERE COALESCE(v.metadata->>'resource_id', '') IN "
                "('', COALESCE(EXCLUDED.metadata->>'resource_id', '')) RETURNING v.id",
                list(latest),
                [_literal(v) for v, _ in latest.values()],
                [json.dumps(m, ensure_ascii=False, default=str) for _, m in latest.values()],
            )
            refused = set(latest) - {row["id"] for row in written}
            if refused:
                raise vector_owner_error(name, sorted(refused)[0])
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
        if top_k <= 0:
            return []
        where, params = to_postgres(filter, first_param=3)
        sql = (
            f'SELECT id, metadata, 1 - (embedding <=> $1::text::vector) AS score FROM "{name}" '
            f"WHERE {where} ORDER BY embedding <=> $1::text::vector LIMIT $2"
        )
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(f"SET LOCAL hnsw.ef_search = {max(int(self.ef_search), top_k)}")
            if self._iterative_scan and filter:
                await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = await conn.fetch(sql, _literal(vector), top_k, *params)
        results = sorted(
            (QueryResult(id=r["id"], score=float(r["score"]), metadata=r["metadata"]) for r in rows),
            key=lambda r: -r.score,
        )
        return above_threshold(results, threshold)

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        await self._dimension(name)
        pool = await self.pool()
        await pool.execute(f'DELETE FROM "{name}" WHERE id = ANY($1::text[])', list(ids))

    async def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()
