"""`SemanticRecall`: find earlier messages similar to the user's question and bring them (with
their neighbours) into the run; index each new message after a successful run."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from sluicegate.embeddings.base import Embedder, EmbeddingCache
from sluicegate.memory.context import memory_context
from sluicegate.memory.history import add_remembered, message_text
from sluicegate.memory.ownership import readable_context, writable_context
from sluicegate.messages.message import Message, format_datetime
from sluicegate.processors.args import ProcessInputArgs, ProcessOutputResultArgs
from sluicegate.processors.base import Processor
from sluicegate.storage.base import MemoryStore
from sluicegate.storage.types import MessageInclude
from sluicegate.vector.base import VectorStore

logger = logging.getLogger(__name__)

SHARED_EMBEDDING_CACHE = EmbeddingCache(maxsize=1000)
"""One cache for every SemanticRecall, as Mastra's global embedding cache (keyed by model)."""


def default_index_name(model_id: str) -> str:
    return f"memory_{re.sub(r'[^A-Za-z0-9_]', '_', model_id)}"[:63]


def _range(value: int | Mapping[str, int]) -> tuple[int, int]:
    if isinstance(value, Mapping):
        return int(value.get("before", 0)), int(value.get("after", 0))
    return int(value), int(value)


def format_cross_thread(messages: Sequence[Message]) -> str:
    """Messages from other threads as one system message: grouped by day, each with its time."""
    lines: list[str] = []
    last_day: str | None = None
    for message in messages:
        at = message.created_at
        day = f"{at.year}, {at.strftime('%b')}, {at.day}"
        if day != last_day:
            lines.append(f"\nthe following messages are from {day}")
            last_day = day
        hour = at.hour % 12 or 12
        clock = f"{hour}:{at.minute:02d} {'AM' if at.hour < 12 else 'PM'}"
        lines.append(
            f"Message from previous conversation at {clock}: {message.role.capitalize()}: {message.text}"
        )
    body = "\n".join(lines)
    return (
        "The following messages were remembered from a different conversation:\n"
        f"<remembered_from_other_conversation>\n{body}\n<end_remembered_from_other_conversation>"
    )


class SemanticRecall(Processor):
    """Semantic search over past messages.

    On input it embeds the last user message, asks the vector store for the `top_k` most similar
    stored messages (of this thread, or of all the resource's threads with `scope="resource"`),
    keeps those scoring at least `threshold`, loads each with `message_range` neighbours
    (`2` or `{"before": 2, "after": 1}`) and adds this thread's with source `memory`; other
    threads' messages become one system message with their dates. On output (after a successful
    run, unless read-only) it embeds the run's new user and assistant messages and stores the
    vectors with `message_id`, `thread_id`, `resource_id`, `role`, `content` and `created_at`.
    Embeddings go through an LRU cache. Search failures are logged and never fail the run; a
    thread of another resource (`ThreadAccessError`) does, before the model is called.

    ```python
    recall = SemanticRecall(storage=store, vector=SQLiteVector("memory.db"), embedder=LocalEmbedder(),
                            top_k=3, message_range={"before": 2, "after": 1}, scope="resource", threshold=0.5)
    agent = Agent(name="a", model=model, input_processors=[recall], output_processors=[recall])
    ```
    """

    id = "semantic-recall"
    loads_context = True
    name = "SemanticRecall"

    def __init__(
        self,
        *,
        storage: MemoryStore,
        vector: VectorStore,
        embedder: Embedder,
        top_k: int = 4,
        message_range: int | Mapping[str, int] = 1,
        scope: Literal["thread", "resource"] = "resource",
        threshold: float | None = None,
        index_name: str | None = None,
        read_only: bool = False,
        cache: EmbeddingCache | None = None,
    ) -> None:
        super().__init__()
        if scope not in ("thread", "resource"):
            raise ValueError(f"scope must be 'thread' or 'resource', got {scope!r}")
        if top_k < 1:
            raise ValueError("top_k must be at least 1")
        self.storage = storage
        self.vector = vector
        self.embedder = embedder
        self.top_k = top_k
        self.before, self.after = _range(message_range)
        self.scope = scope
        self.threshold = threshold
        self.index_name = index_name or default_index_name(embedder.model_id)
        self.read_only = read_only
        self.cache = cache if cache is not None else SHARED_EMBEDDING_CACHE
        self._index_ready = False

    async def _ensure_index(self) -> None:
        if not self._index_ready:
            await self.vector.create_index(self.index_name, self.embedder.dimensions)
            self._index_ready = True

    async def process_input(self, args: ProcessInputArgs) -> Any:
        where = await readable_context(self.storage, args.request_context, args.state)
        if not where.thread_id:
            return args.message_list
        query = next(
            (message_text(m) for m in reversed(args.messages) if m.role == "user" and message_text(m)), ""
        )
        if not query:
            return args.message_list
        try:
            [vector] = await self.cache.embed(self.embedder, [query])
            await self._ensure_index()
            # A thread belongs to one resource, so naming both narrows the scan without changing it.
            search_filter: dict[str, str] = {"thread_id": where.thread_id} if self.scope == "thread" else {}
            if where.resource_id:
                search_filter["resource_id"] = where.resource_id
            hits = await self.vector.query(
                self.index_name, vector, top_k=self.top_k, filter=search_filter, threshold=self.threshold
            )
            if not hits:
                return args.message_list
            includes = [
                MessageInclude(str(h.metadata.get("message_id", h.id)), self.before, self.after) for h in hits
            ]
            found = await self.storage.list_messages_around(includes)
        except Exception:
            logger.exception("semantic recall failed; continuing without recalled messages")
            return args.message_list
        present = {m.id for m in args.message_list.get.all.db()}
        found = [m for m in found if m.id not in present and m.role != "system"]
        same_thread = [m for m in found if not m.thread_id or m.thread_id == where.thread_id]
        other_threads = [m for m in found if m.thread_id and m.thread_id != where.thread_id]
        if other_threads and self.scope == "resource":
            args.message_list.add_system(format_cross_thread(other_threads), tag="memory")
        add_remembered(args.message_list, same_thread)
        return args.message_list

    async def process_output_result(self, args: ProcessOutputResultArgs) -> Any:
        where = memory_context(args.request_context)
        if not where.thread_id or self.read_only or where.read_only:
            return args.message_list
        where = await writable_context(self.storage, args.request_context, args.state)
        fresh = [
            m
            for m in (*args.message_list.get.input.db(), *args.message_list.get.response.db())
            if m.role in ("user", "assistant") and message_text(m)
        ]
        if not fresh:
            return args.message_list
        try:
            texts = [message_text(m) for m in fresh]
            vectors = await self.cache.embed(self.embedder, texts)
            await self._ensure_index()
            metadata = [
                {
                    "message_id": m.id,
                    "thread_id": where.thread_id,
                    "resource_id": where.resource_id or "",
                    "role": m.role,
                    "content": text,
                    "created_at": format_datetime(m.created_at),
                }
                for m, text in zip(fresh, texts, strict=True)
            ]
            await self.vector.upsert(self.index_name, vectors, [m.id for m in fresh], metadata)
        except Exception:
            logger.exception("semantic recall could not index this turn's messages")
        return args.message_list
