"""Errors of the storage layer."""

from __future__ import annotations

from sluicegate.errors import StorageError

__all__ = ["MessageWithoutThreadError", "StorageError", "ThreadNotFoundError"]


class ThreadNotFoundError(StorageError, KeyError):
    """An operation named a thread that does not exist."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread {thread_id!r} does not exist")
        self.thread_id = thread_id

    def __str__(self) -> str:
        return str(self.args[0])


class MessageWithoutThreadError(StorageError, ValueError):
    """A message was saved without a `thread_id`; memory cannot tell which conversation it is in."""
