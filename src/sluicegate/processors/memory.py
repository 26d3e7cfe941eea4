"""`Memory`: conversation threads, semantic recall and working memory for an agent.

`Agent(memory=Memory(...))` plus `agent.generate(..., memory={"thread": "t1", "resource": "u1"})`
makes the agent call `bind`, which creates the thread on first use, refuses a thread owned by
another resource, and returns the memory processors and tools for that one request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sluicegate.embeddings.base import Embedder, EmbeddingCache
from sluicegate.memory.binding import MemoryBinding
from sluicegate.memory.context import set_memory_context
from sluicegate.memory.errors import MemoryConfigurationError, MemoryOptionError, ThreadAccessError
from sluicegate.memory.signals import is_signal_message
from sluicegate.messages.message import Message
from sluicegate.processors.builtin.message_history import MessageHistory
from sluicegate.processors.builtin.semantic_recall import SemanticRecall
from sluicegate.processors.builtin.working_memory import (
    Scope,
    WorkingMemory,
    create_update_working_memory_tool,
    read_working_memory,
    resolve_template,
    write_working_memory,
)
from sluicegate.request_context import AGENT_ID_KEY, RequestContext
from sluicegate.storage.base import MemoryStore
from sluicegate.storage.sqlite import SQLiteStore
from sluicegate.storage.types import Thread
from sluicegate.vector.base import VectorStore

OPTION_ALIASES = {
    "lastMessages": "last_messages",
    "semanticRecall": "semantic_recall",
    "workingMemory": "working_memory",
    "readOnly": "read_only",
    "topK": "top_k",
    "messageRange": "message_range",
    "indexName": "index_name",
}


def _snake(options: Mapping[str, Any]) -> dict[str, Any]:
    return {OPTION_ALIASES.get(k, k): v for k, v in options.items()}


@dataclass(frozen=True)
class SemanticRecallOptions:
    top_k: int = 4
    message_range: int | dict[str, int] = 1
    scope: Scope = "resource"
    threshold: float | None = None
    index_name: str | None = None


@dataclass(frozen=True)
class WorkingMemoryOptions:
    enabled: bool = False
    scope: Scope = "resource"
    template: Any = None


@dataclass(frozen=True)
class MemoryOptions:
    """Mastra's memory options, snake_case. `last_messages=False` (or 0) loads no history;
    messages are still stored unless `read_only`."""

    last_messages: int | bool | None = 10
    semantic_recall: SemanticRecallOptions | None = None
    working_memory: WorkingMemoryOptions = field(default_factory=WorkingMemoryOptions)
    read_only: bool = False

    def merged(self, overrides: Mapping[str, Any] | MemoryOptions | None) -> MemoryOptions:
        """These options with `overrides` (a dict, camelCase or snake_case keys) applied."""
        if overrides is None:
            return self
        if isinstance(overrides, MemoryOptions):
            return overrides
        values = _snake(overrides)
        unknown = set(values) - {"last_messages", "semantic_recall", "working_memory", "read_only"}
        if unknown:
            raise MemoryConfigurationError(f"unknown memory options: {sorted(unknown)}")
        result = self
        if "last_messages" in values:
            last = values["last_messages"]
            if last is True or (
                last is not None and last is not False and (not isinstance(last, int) or last < 0)
            ):
                raise MemoryConfigurationError(
                    f"last_messages must be a non-negative int, False or None, got {last!r}"
                )
            result = replace(result, last_messages=last)
        if "semantic_recall" in values:
            result = replace(
                result, semantic_recall=_semantic(values["semantic_recall"], result.semantic_recall)
            )
        if "working_memory" in values:
            result = replace(result, working_memory=_working(values["working_memory"], result.working_memory))
        if "read_only" in values:
            result = replace(result, read_only=bool(values["read_only"]))
        return result


def _semantic(value: Any, current: SemanticRecallOptions | None) -> SemanticRecallOptions | None:
    if value is False or value is None:
        return None
    base = current or SemanticRecallOptions()
    if value is True:
        return base
    if not isinstance(value, Mapping):
        raise MemoryConfigurationError(f"semantic_recall must be a bool or a dict, got {value!r}")
    return replace(base, **semantic_fields(value, "semantic_recall"))


def _working(value: Any, current: WorkingMemoryOptions) -> WorkingMemoryOptions:
    if isinstance(value, bool):
        return replace(current, enabled=value)
    if not isinstance(value, Mapping):
        raise MemoryConfigurationError(f"working_memory must be a bool or a dict, got {value!r}")
    return replace(current, **working_fields(value, "working_memory"))


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _top_k(value: Any, where: str) -> int:
    if not _whole(value, 1):
        raise MemoryOptionError(where, f"must be a positive integer, got {value!r}")
    return int(value)


def _message_range(value: Any, where: str) -> int | dict[str, int]:
    if _whole(value, 0):
        return int(value)
    if (
        isinstance(value, Mapping)
        and set(value) <= {"before", "after"}
        and all(_whole(v, 0) for v in value.values())
    ):
        return {str(k): int(v) for k, v in value.items()}
    raise MemoryOptionError(
        where, f"must be a non-negative integer or {{before, after}} of them, got {value!r}"
    )


def _scope(value: Any, where: str) -> Scope:
    if value not in ("thread", "resource"):
        raise MemoryOptionError(where, f"must be 'thread' or 'resource', got {value!r}")
    return value  # type: ignore[no-any-return]


def _threshold(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MemoryOptionError(where, f"must be a number, got {value!r}")
    return float(value)


def _index_name(value: Any, where: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise MemoryOptionError(where, f"must be a non-empty string, got {value!r}")
    return value


def _enabled(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise MemoryOptionError(where, f"must be true or false, got {value!r}")
    return value


def _template(value: Any, where: str) -> Any:
    try:
        resolve_template(value)
    except MemoryConfigurationError as exc:
        raise MemoryOptionError(where, str(exc)) from None
    return value


_SEMANTIC_FIELDS: dict[str, Any] = {
    "top_k": _top_k,
    "message_range": _message_range,
    "scope": _scope,
    "threshold": _threshold,
    "index_name": _index_name,
}
_WORKING_FIELDS: dict[str, Any] = {"enabled": _enabled, "scope": _scope, "template": _template}


def _fields(value: Mapping[str, Any], where: str, checks: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        check = checks.get(OPTION_ALIASES.get(key, key))
        if check is None:
            raise MemoryOptionError(f"{where}.{key}", f"unknown option; known: {sorted(checks)}")
        out[OPTION_ALIASES.get(key, key)] = check(item, f"{where}.{key}")
    return out


def semantic_fields(value: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The semantic recall options of `value`, snake_case and checked (`MemoryOptionError`
    naming `where.<key>` otherwise)."""
    return _fields(value, where, _SEMANTIC_FIELDS)


def working_fields(value: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The working memory options of `value`, snake_case and checked."""
    return _fields(value, where, _WORKING_FIELDS)


class Memory:
    """Memory for agents: message history, semantic recall and working memory over one store.

    ```python
    memory = Memory(storage=SQLiteStore("memory.db"),
                    options={"last_messages": 20, "semantic_recall": {"top_k": 3},
                             "working_memory": {"enabled": True, "scope": "resource"}})
    agent = Agent(name="assistant", model="openai/gpt-5", memory=memory)
    await agent.generate("Hi, I'm Ada", memory={"thread": "t1", "resource": "user-1"})
    ```

    Semantic recall needs a vector store and an embedder; with a `SQLiteStore` on a file and
    none given, it uses `SQLiteVector` on the same file and the offline `LocalEmbedder`.
    """

    def __init__(
        self,
        *,
        storage: MemoryStore | None = None,
        vector: VectorStore | None = None,
        embedder: Embedder | None = None,
        options: Mapping[str, Any] | MemoryOptions | None = None,
    ) -> None:
        self.storage: MemoryStore = storage if storage is not None else SQLiteStore(":memory:")
        self.options = MemoryOptions().merged(options)
        self._vector = vector
        self._embedder = embedder
        self.embedding_cache: EmbeddingCache | None = None
        """The cache semantic recall embeds through; None: the one every `SemanticRecall` shares."""
        if self.options.semantic_recall is not None:
            self._semantic_parts()  # fail at construction when semantic recall cannot work

    def __repr__(self) -> str:
        return f"Memory(storage={self.storage!r})"

    @property
    def vector(self) -> VectorStore | None:
        """The vector store semantic recall searches (None without semantic recall)."""
        return self._vector

    @property
    def embedder(self) -> Embedder | None:
        """The embedder semantic recall uses (None without semantic recall)."""
        return self._embedder

    def with_parts(
        self,
        *,
        storage: MemoryStore | None = None,
        vector: VectorStore | None = None,
        embedder: Embedder | None = None,
        embedding_cache: EmbeddingCache | None = None,
    ) -> Memory:
        """This memory (the same options) over other parts, the ones not given kept. A durable
        run's workflow gives it stand-ins whose calls are activities, and a cache of its own."""
        other = type(self)(
            storage=self.storage if storage is None else storage,
            vector=self.vector if vector is None else vector,
            embedder=self.embedder if embedder is None else embedder,
            options=self.options,
        )
        other.embedding_cache = self.embedding_cache if embedding_cache is None else embedding_cache
        return other

    # ---------------------------------------------------------------- the agent contract

    async def bind(
        self,
        *,
        thread_id: str,
        resource_id: str | None,
        request_context: RequestContext,
        options: Mapping[str, Any] | MemoryOptions | None = None,
    ) -> MemoryBinding:
        """Create or check the thread, then return this request's memory processors and tools.
        `options` is a dict of overrides, or complete `MemoryOptions` (as the server passes after
        narrowing them)."""
        config = self.options.merged(options)
        if not resource_id:
            raise MemoryConfigurationError(
                "memory needs a resource id as well as a thread id: memory={'thread': ..., 'resource': ...}"
            )
        # A new thread records the agent that started it, so the studio can list an agent's own
        # threads when several agents share one store.
        agent_id = request_context.get(AGENT_ID_KEY)
        await self.get_or_create_thread(
            thread_id, resource_id, metadata={"agentId": agent_id} if isinstance(agent_id, str) else None
        )
        set_memory_context(
            request_context, thread_id=thread_id, resource_id=resource_id, read_only=config.read_only
        )

        inputs: list[Any] = []
        outputs: list[Any] = []
        tools: dict[str, Any] = {}
        wm = config.working_memory
        if wm.enabled:
            inputs.append(
                WorkingMemory(
                    storage=self.storage, scope=wm.scope, template=wm.template, read_only=config.read_only
                )
            )
            if not config.read_only:
                tool = create_update_working_memory_tool(self.storage, scope=wm.scope, template=wm.template)
                tools[tool.id] = tool
        if config.semantic_recall is not None:
            recall = self._semantic_recall(config.semantic_recall, read_only=config.read_only)
            inputs.append(recall)
            outputs.append(recall)
        last = config.last_messages
        history = MessageHistory(
            storage=self.storage,
            last_messages=0 if last is False else last,
            read_only=config.read_only,
        )
        inputs.append(history)
        outputs.append(history)
        return MemoryBinding(input_processors=inputs, output_processors=outputs, tools=tools)

    # ---------------------------------------------------------------- threads and messages

    async def get_or_create_thread(
        self, thread_id: str, resource_id: str, *, title: str = "", metadata: dict[str, Any] | None = None
    ) -> Thread:
        """The thread, created for `resource_id` when new; `ThreadAccessError` when another
        resource owns it."""
        thread = await self.storage.get_thread(thread_id)
        if thread is None:
            thread = await self.storage.create_thread(
                Thread(id=thread_id, resource_id=resource_id, title=title, metadata=dict(metadata or {}))
            )
        if thread.resource_id != resource_id:
            raise ThreadAccessError(thread_id, resource_id)
        return thread

    async def get_thread(self, thread_id: str) -> Thread | None:
        return await self.storage.get_thread(thread_id)

    async def list_threads(self, resource_id: str) -> list[Thread]:
        return await self.storage.list_threads(resource_id)

    async def delete_thread(self, thread_id: str) -> None:
        await self.storage.delete_thread(thread_id)

    async def recall(
        self, thread_id: str, *, resource_id: str, last: int | None = None, include_signals: bool = False
    ) -> list[Message]:
        """The thread's stored messages (the newest `last`), checked against the resource.

        Signal messages (what `send_signal` added, and system reminders such as
        `PrefillErrorHandler`'s `continue`) are for the model, not for people reading the
        conversation: they are left out unless `include_signals=True`."""
        thread = await self.storage.get_thread(thread_id)
        if thread is None:
            return []
        if thread.resource_id != resource_id:
            raise ThreadAccessError(thread_id, resource_id)
        if include_signals:
            return await self.storage.list_messages(thread_id, last=last)
        messages = [m for m in await self.storage.list_messages(thread_id) if not is_signal_message(m)]
        if last is not None:
            return messages[-last:] if last > 0 else []
        return messages

    # ---------------------------------------------------------------- working memory

    async def get_working_memory(
        self, *, thread_id: str | None = None, resource_id: str | None = None
    ) -> str | None:
        wm = self.options.working_memory
        return await read_working_memory(
            self.storage, scope=wm.scope, thread_id=thread_id, resource_id=resource_id
        )

    async def update_working_memory(
        self, value: str, *, thread_id: str | None = None, resource_id: str | None = None
    ) -> None:
        wm = self.options.working_memory
        await write_working_memory(
            self.storage, value, scope=wm.scope, thread_id=thread_id, resource_id=resource_id
        )

    async def close(self) -> None:
        await self.storage.close()
        if self._vector is not None:
            await self._vector.close()

    # ---------------------------------------------------------------- semantic recall parts

    def _semantic_parts(self) -> tuple[VectorStore, Embedder]:
        if self._vector is None:
            if not isinstance(self.storage, SQLiteStore):
                raise MemoryConfigurationError(
                    "semantic recall needs vector= (e.g. PgVector) with this storage"
                )
            from sluicegate.vector.sqlite import SQLiteVector

            self._vector = SQLiteVector(self.storage.path)
        if self._embedder is None:
            from sluicegate.embeddings.local import LocalEmbedder

            self._embedder = LocalEmbedder()
        return self._vector, self._embedder

    def _semantic_recall(self, options: SemanticRecallOptions, *, read_only: bool) -> SemanticRecall:
        vector, embedder = self._semantic_parts()
        return SemanticRecall(
            storage=self.storage,
            vector=vector,
            embedder=embedder,
            top_k=options.top_k,
            message_range=options.message_range,
            scope=options.scope,
            threshold=options.threshold,
            index_name=options.index_name,
            read_only=read_only,
            cache=self.embedding_cache,
        )
