"""The embedder protocol and the LRU cache that keeps memory from embedding a text twice."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of `dimensions` floats; `model_id` names the vector space."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class EmbeddingCache:
    """A least-recently-used map from (model, text) to its vector, shared by any number of embedders."""

    def __init__(self, maxsize: int = 1000) -> None:
        if maxsize <= 0:
            raise ValueError("maxsize must be positive")
        self.maxsize = maxsize
        self._entries: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.hits = self.misses = 0

    def get(self, model_id: str, text: str) -> list[float] | None:
        key = (model_id, text)
        vector = self._entries.get(key)
        if vector is not None:
            self._entries.move_to_end(key)
        return vector

    def put(self, model_id: str, text: str, vector: list[float]) -> None:
        key = (model_id, text)
        self._entries[key] = vector
        self._entries.move_to_end(key)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)

    async def embed(self, embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for `texts`, calling the embedder once for the texts not cached yet."""
        model = embedder.model_id
        found: dict[str, list[float]] = {}
        missing: list[str] = []
        for text in texts:
            if text in found or text in missing:
                continue
            vector = self.get(model, text)
            if vector is None:
                missing.append(text)
            else:
                found[text] = vector
        self.hits += len(found)
        self.misses += len(missing)
        if missing:
            vectors = await embedder.embed(missing)
            if len(vectors) != len(missing):
                raise ValueError(
                    f"embedder {model!r} returned {len(vectors)} vectors for {len(missing)} texts"
                )
            for text, vector in zip(missing, vectors, strict=True):
                self.put(model, text, vector)
                found[text] = vector
        return [found[text] for text in texts]


class CachedEmbedder:
    """An embedder that answers repeated texts from an `EmbeddingCache`."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None = None) -> None:
        self.inner = embedder
        self.cache = cache if cache is not None else EmbeddingCache()
        self._lock = asyncio.Lock()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.cache.embed(self.inner, texts)
