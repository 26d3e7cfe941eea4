"""`OpenAIEmbedder`: embeddings from OpenAI (or any OpenAI-compatible endpoint) via the `openai` SDK."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openai import AsyncOpenAI

_KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """```python
    embedder = OpenAIEmbedder("text-embedding-3-small")          # key from OPENAI_API_KEY
    embedder = OpenAIEmbedder("text-embedding-3-small", dimensions=256)
    ```
    `dimensions` is sent to the API (shortened vectors) when given; otherwise it is the model's
    known size, or learned from the first response for unknown models.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        dimensions: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        client: AsyncOpenAI | None = None,
        batch_size: int = 512,
    ) -> None:
        self.model = model
        self._requested_dimensions = dimensions
        self._dimensions = dimensions or _KNOWN_DIMENSIONS.get(model)
        self.batch_size = batch_size
        self._client = client if client is not None else AsyncOpenAI(api_key=api_key, base_url=base_url)

    @property
    def model_id(self) -> str:
        return (
            self.model if self._requested_dimensions is None else f"{self.model}-{self._requested_dimensions}"
        )

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            raise ValueError(f"the dimensions of {self.model!r} are known after the first embed call")
        return self._dimensions

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            extra: dict[str, Any] = {}
            if self._requested_dimensions is not None:
                extra["dimensions"] = self._requested_dimensions
            response = await self._client.embeddings.create(
                model=self.model, input=list(texts[start : start + self.batch_size]), **extra
            )
            vectors.extend(list(item.embedding) for item in sorted(response.data, key=lambda d: d.index))
        if vectors and self._dimensions is None:
            self._dimensions = len(vectors[0])
        return vectors
