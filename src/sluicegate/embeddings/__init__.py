"""Embedders: the protocol, an LRU cache, the offline `LocalEmbedder` and `OpenAIEmbedder`."""

from typing import TYPE_CHECKING

from sluicegate._lazy import lazy_attributes
from sluicegate.embeddings.base import CachedEmbedder, Embedder, EmbeddingCache

if TYPE_CHECKING:
    from sluicegate.embeddings.local import LocalEmbedder
    from sluicegate.embeddings.openai import OpenAIEmbedder

# The embedders load on first use (LocalEmbedder needs the `local` extra; OpenAIEmbedder the
# openai SDK, which is slow to import).
__getattr__ = lazy_attributes(__name__, {"LocalEmbedder": "local", "OpenAIEmbedder": "openai"})

__all__ = ["CachedEmbedder", "Embedder", "EmbeddingCache", "LocalEmbedder", "OpenAIEmbedder"]
