"""Embedders: the protocol, an LRU cache, the offline `LocalEmbedder` and `OpenAIEmbedder`."""

from sluicegate.embeddings.base import CachedEmbedder, Embedder, EmbeddingCache
from sluicegate.embeddings.local import LocalEmbedder
from sluicegate.embeddings.openai import OpenAIEmbedder

__all__ = ["CachedEmbedder", "Embedder", "EmbeddingCache", "LocalEmbedder", "OpenAIEmbedder"]
