"""Errors of the storage layer."""

from __future__ import annotations

from sluicegate.errors import StorageError

__all__ = [
    "AmbiguousToolCallError",
    "InvalidSuspendedRunError",
    "MessageWithoutThreadError",
    "SnapshotTooLargeError",
    "StorageError",
    "SuspendedRunConflictError",
    "SuspendedRunError",
    "SuspendedRunNotFoundError",
    "ThreadNotFoundError",
    "ToolCallNotPendingError",
]


class ThreadNotFoundError(StorageError, KeyError):
    """An operation named a thread that does not exist."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread {thread_id!r} does not exist")
        self.thread_id = thread_id

    def __str__(self) -> str:
        return str(self.args[0])


class MessageWithoutThreadError(StorageError, ValueError):
    """A message was saved without a `thread_id`; memory cannot tell which conversation it is in."""


# ---------------------------------------------------------------- suspended runs
# Every one of these leaves the stored run exactly as it was.


class SuspendedRunError(StorageError):
    """A suspended-run operation was refused; `run_id` names the run."""

    def __init__(self, run_id: str, message: str) -> None:
        super().__init__(message)
        self.run_id = run_id

    def __str__(self) -> str:
        return str(self.args[0])


class SuspendedRunNotFoundError(SuspendedRunError, KeyError):
    """No suspended run with this id can be taken: it never existed, expired, already ended, is
    being resumed (claimed), or belongs to another resource. One error for all of them, so a
    caller learns nothing about runs it may not touch; `reason` says which, for logs."""

    def __init__(self, run_id: str, reason: str = "unknown", *, hint: str | None = None) -> None:
        super().__init__(
            run_id,
            f"no suspended run {run_id!r} to resume ({reason}: runs that ended, expired or are "
            "already being resumed cannot be resumed again" + (f"; {hint})" if hint else ")"),
        )
        self.reason = reason


class ToolCallNotPendingError(SuspendedRunError, ValueError):
    """The named tool call is not waiting on the run (unknown, stale or already decided)."""

    def __init__(self, run_id: str, tool_call_id: str, pending: tuple[str, ...]) -> None:
        super().__init__(
            run_id,
            f"tool call {tool_call_id!r} is not pending on suspended run {run_id!r} "
            f"(pending: {', '.join(map(repr, pending)) or 'none'})",
        )
        self.tool_call_id = tool_call_id
        self.pending = pending


class AmbiguousToolCallError(SuspendedRunError, ValueError):
    """No tool call id was given and the run waits on more than one: the caller must say which."""

    def __init__(self, run_id: str, pending: tuple[str, ...]) -> None:
        super().__init__(
            run_id,
            f"suspended run {run_id!r} waits on {len(pending)} tool calls "
            f"({', '.join(map(repr, pending))}); name the one to resume with tool_call_id",
        )
        self.pending = pending


class SuspendedRunConflictError(SuspendedRunError):
    """A save did not match the stored run: a second insert of one run id, a replacement whose
    version is not the stored one's successor, of a run nobody claimed, or that changes its owner."""

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(run_id, f"suspended run {run_id!r} was not saved: {reason}")
        self.reason = reason


class SnapshotTooLargeError(SuspendedRunError, ValueError):
    """A suspended run's JSON (snapshot and pending calls) is over the store's size limit."""

    def __init__(self, run_id: str, size: int, limit: int) -> None:
        super().__init__(
            run_id,
            f"suspended run {run_id!r} is {size} bytes of JSON, over the limit of {limit} bytes "
            "(max_snapshot_bytes)",
        )
        self.size = size
        self.limit = limit


class InvalidSuspendedRunError(SuspendedRunError, ValueError):
    """A suspended run's fields are malformed, or its payloads would not read back as given."""

    def __init__(self, run_id: str, problem: str) -> None:
        super().__init__(run_id, f"suspended run {run_id!r} is invalid: {problem}")
        self.problem = problem
