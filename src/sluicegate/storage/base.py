"""`MemoryStore`: the one interface every storage backend implements.

Memory processors, the `Memory` class and the cost guard only talk to this interface, so
`SQLiteStore` and `PostgresStore` are interchangeable and share one test suite.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol, Self

from sluicegate.budget import Reservation
from sluicegate.messages.message import Message
from sluicegate.storage.types import MessageInclude, Resource, Thread


class UsageStore(Protocol):
    """Where the cost guard records spend: one row per model call, summed per key."""

    async def record(self, key: str, cost: float, usage: dict[str, int], at: datetime) -> None: ...

    async def total(self, key: str, since: datetime | None) -> float: ...


__all__ = ["MemoryStore", "Reservation", "UsageStore"]


class MemoryStore(abc.ABC):
    """Threads, messages (in Mastra's stored shape), resources and usage records."""

    # ---------------------------------------------------------------- threads

    @abc.abstractmethod
    async def get_thread(self, thread_id: str) -> Thread | None:
        """The thread, or None when there is none with this id."""

    @abc.abstractmethod
    async def create_thread(self, thread: Thread) -> Thread:
        """Insert the thread unless one with its id exists; return the stored one either way
        (so a caller racing another creator sees the winner and can check its owner)."""

    @abc.abstractmethod
    async def save_thread(self, thread: Thread) -> Thread:
        """Insert or replace the thread as given."""

    @abc.abstractmethod
    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Thread:
        """Change the title and/or replace the metadata, and set `updated_at` to now.
        Raises `ThreadNotFoundError`."""

    @abc.abstractmethod
    async def list_threads(self, resource_id: str) -> list[Thread]:
        """The resource's threads, most recently updated first."""

    @abc.abstractmethod
    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread and its messages."""

    # ---------------------------------------------------------------- messages

    @abc.abstractmethod
    async def save_messages(self, messages: Sequence[Message]) -> None:
        """Insert or update messages by id, atomically. Each must have a `thread_id`."""

    async def message_owners(self, message_ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        """`{id: (thread_id, resource_id)}` of the stored messages among `message_ids` (the
        ownership check before a run; backends answer it with one query)."""
        found = await self.list_messages_around([MessageInclude(i) for i in dict.fromkeys(message_ids)])
        wanted = set(message_ids)
        return {m.id: (str(m.thread_id), m.resource_id) for m in found if m.id in wanted}

    @abc.abstractmethod
    async def list_messages(self, thread_id: str, *, last: int | None = None) -> list[Message]:
        """The thread's messages in creation order; only the newest `last` when given."""

    @abc.abstractmethod
    async def list_messages_around(self, includes: Sequence[MessageInclude]) -> list[Message]:
        """The named messages with their neighbours in their own threads, deduplicated,
        in creation order."""

    @abc.abstractmethod
    async def count_messages(self, thread_id: str) -> int:
        """How many messages the thread holds."""

    @abc.abstractmethod
    async def delete_messages(self, message_ids: Sequence[str]) -> None:
        """Delete messages by id (missing ids are ignored)."""

    # ---------------------------------------------------------------- resources

    @abc.abstractmethod
    async def get_resource(self, resource_id: str) -> Resource | None:
        """The resource record, or None."""

    @abc.abstractmethod
    async def update_resource(
        self, resource_id: str, *, working_memory: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Resource:
        """Create or update the resource; fields left as None keep their value."""

    # ---------------------------------------------------------------- usage (the cost guard's store)

    @abc.abstractmethod
    async def record(self, key: str, cost: float, usage: dict[str, int], at: datetime) -> None:
        """Record the cost and token usage of one model call under `key`."""

    @abc.abstractmethod
    async def total(self, key: str, since: datetime | None) -> float:
        """The summed cost recorded under `key` at or after `since` (all time when None)."""

    # ---------------------------------------------------------------- lifecycle

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections and threads. The store cannot be used afterwards."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
