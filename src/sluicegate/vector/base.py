"""`VectorStore`: named indexes of (id, vector, metadata) with cosine top-k search."""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from sluicegate.errors import AccessDeniedError, SluicegateError
from sluicegate.vector.filter import Filter

_INDEX_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


class VectorStoreError(SluicegateError):
    """A vector store was asked for something it cannot do (unknown index, wrong dimension...)."""


@dataclass
class QueryResult:
    id: str
    score: float
    """Cosine similarity, 1 for the same direction."""
    metadata: dict[str, Any] = field(default_factory=dict)


def check_index_name(name: str) -> str:
    if not _INDEX_NAME.match(name):
        raise VectorStoreError(
            f"index name {name!r} must be a letter or _ followed by up to 62 letters, digits or _"
        )
    return name


def check_upsert(
    vectors: Sequence[Sequence[float]],
    ids: Sequence[str],
    metadata: Sequence[Mapping[str, Any]] | None,
    dimension: int,
) -> None:
    if len(vectors) != len(ids) or (metadata is not None and len(metadata) != len(ids)):
        raise VectorStoreError("upsert needs as many ids (and metadata entries) as vectors")
    for vector in vectors:
        if len(vector) != dimension:
            raise VectorStoreError(
                f"vector of dimension {len(vector)} does not fit an index of dimension {dimension}"
            )


def check_query_vector(vector: Sequence[float], dimension: int) -> None:
    if len(vector) != dimension:
        raise VectorStoreError(
            f"query vector of dimension {len(vector)} for an index of dimension {dimension}"
        )


def above_threshold(results: list[QueryResult], threshold: float | None) -> list[QueryResult]:
    """`results` without those scoring below `threshold` (all of them when it is None)."""
    if threshold is None:
        return results
    return [r for r in results if r.score >= threshold]


class VectorStore(abc.ABC):
    """The operations semantic recall needs; both backends implement them identically."""

    @abc.abstractmethod
    async def create_index(self, name: str, dimension: int, metric: str = "cosine") -> None:
        """Create the index unless it exists (an existing one must have the same dimension)."""

    @abc.abstractmethod
    async def list_indexes(self) -> list[str]: ...

    @abc.abstractmethod
    async def describe_index(self, name: str) -> dict[str, Any]:
        """`{"dimension", "metric", "count"}`."""

    @abc.abstractmethod
    async def delete_index(self, name: str) -> None: ...

    @abc.abstractmethod
    async def upsert(
        self,
        name: str,
        vectors: Sequence[Sequence[float]],
        ids: Sequence[str],
        metadata: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Insert or replace vectors by id; returns the ids."""

    @abc.abstractmethod
    async def query(
        self,
        name: str,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        filter: Filter | None = None,
        threshold: float | None = None,
    ) -> list[QueryResult]:
        """The `top_k` most similar entries matching `filter`, best first; entries scoring
        below `threshold` are left out."""

    @abc.abstractmethod
    async def delete(self, name: str, ids: Sequence[str]) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def vector_owner_error(index_name: str, vector_id: str) -> AccessDeniedError:
    """The error for an upsert that would overwrite a vector written for another resource
    (`metadata["resource_id"]`): vectors, like messages, stay with their owner."""
    return AccessDeniedError(
        f"vector {vector_id!r} in index {index_name!r} belongs to another resource; "
        "an upsert cannot overwrite it (nothing in this batch was written)"
    )
