"""Semantic recall in a durable run: embeddings and the vector store are activities.

The workflow's memory (`durable_memory`) embeds through `ActivityEmbedder`, whose calls are the
activity `sluicegate.<agent id>.embed` (a regular activity: an embedding costs money, and its
answer is recorded once), and searches and indexes through a stand-in of the memory's vector
store whose calls are the storage activity (locator `["vector"]`; local activities, like the
memory's other reads and saves by id). A replay answers both from the history.

Messages are indexed by their ids (from `workflow.uuid4()`, the same on every replay), with an
upsert that replaces by id, so a message is indexed once whichever worker finishes the run.

The embedding cache every `SemanticRecall` shares is not used in the workflow: whether a text is
in it depends on what the worker did before, so a replay on another worker would embed where the
first run did not. The run gets a cache of its own (the activity still embeds through the shared
one, on the worker that runs it).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from temporalio import activity, workflow
from temporalio.exceptions import ActivityError

from sluicegate.durable.temporal import names
from sluicegate.durable.temporal.failures import from_activity_error, to_application_error
from sluicegate.durable.temporal.heartbeats import beating
from sluicegate.durable.temporal.judges import ActivityOptions
from sluicegate.durable.temporal.payloads import checked
from sluicegate.durable.temporal.stores import Call, store_proxy
from sluicegate.embeddings.base import Embedder, EmbeddingCache

if TYPE_CHECKING:
    from sluicegate.agent import Agent


class ActivityEmbedder:
    """The memory's embedder inside the workflow: each `embed` is the embed activity."""

    def __init__(self, agent_id: str, real: Embedder, options: ActivityOptions) -> None:
        self._activity = names.embed_activity(agent_id)
        self._real = real
        self._options = options
        self._dimensions: int | None = None
        self.model_id = real.model_id

    @property
    def dimensions(self) -> int:
        """Those of the vectors the activity returned (an embedder may learn its dimensions from
        its first call, which happened on some worker, not necessarily this one)."""
        return self._dimensions if self._dimensions is not None else self._real.dimensions

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        call = checked("the texts of an embedding call", {"texts": list(texts)})
        try:
            vectors: list[list[float]] = await workflow.execute_activity(
                self._activity, call, **self._options.kwargs()
            )
        except ActivityError as exc:
            raise from_activity_error(exc) from None
        if vectors:
            self._dimensions = len(vectors[0])
        return vectors


def embedder_of(memory: Any) -> Embedder | None:
    return getattr(memory, "embedder", None)


def durable_memory(
    memory: Any, agent_id: str, storage: Callable[[list[str]], Call], options: ActivityOptions
) -> Any:
    """The agent's memory as the workflow uses it: storage, vector store and embedder calls are
    activities (`storage(locator)` makes the storage activity's calls for a store), with an
    embedding cache of its own."""
    parts: dict[str, Any] = {"storage": store_proxy(memory.storage, storage(["memory"]))}
    if not hasattr(memory, "with_parts"):  # a memory of the application's own: its storage only
        other = copy.copy(memory)
        other.storage = parts["storage"]
        return other
    vector = getattr(memory, "vector", None)
    embedder = embedder_of(memory)
    if vector is not None and embedder is not None:
        parts["vector"] = store_proxy(vector, storage(["vector"]))
        parts["embedder"] = ActivityEmbedder(agent_id, embedder, options)
        parts["embedding_cache"] = EmbeddingCache()
    return memory.with_parts(**parts)


# ---------------------------------------------------------------------- the worker's side


def embed_activity(lookup: Callable[[str], Agent[Any]], agent_id: str) -> Callable[..., Any]:
    """The activity embedding texts with the agent's memory's real embedder (through the shared
    cache, as a run in one process does)."""
    from sluicegate.processors.builtin.semantic_recall import SHARED_EMBEDDING_CACHE

    async def embed_call(call: dict[str, Any]) -> list[list[float]]:
        try:
            embedder = embedder_of(lookup(agent_id).memory)
            if embedder is None:
                raise LookupError(f"agent {agent_id!r} has no memory embedder on this worker")
            with beating():
                vectors = await SHARED_EMBEDDING_CACHE.embed(embedder, list(call["texts"]))
        except Exception as exc:
            raise to_application_error(exc) from exc
        answer: list[list[float]] = checked("the vectors of an embedding call", vectors)
        return answer

    return activity.defn(name=names.embed_activity(agent_id))(embed_call)
