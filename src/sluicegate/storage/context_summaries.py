"""Conversation summaries kept with their thread: what `ContextCompactor` wrote in place of a
thread's older messages, and which messages it covers, so the next turn reuses it.

One summary per conversation (a thread of a resource), replaced when a later compaction covers
more. `covered` is how many of the prompt's conversation messages (after the system messages)
the summary stood for when it was written, `covered_hash` a digest of the last of them (the
summary is reused while a prompt holds them, with something after), `first_message_id` /
`last_message_id` the stored messages it covers when they could be told apart.
`InMemoryContextSummaryStore` keeps them in this process; `SQLiteStore` and `PostgresStore` in
their `sluicegate_context_summaries` table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

MAX_SUMMARY_CHARS = 200_000
"""A summary longer than this is refused by the stores (a summary is a few hundred tokens)."""
MAX_ID_CHARS = 1024
"""A resource or thread id longer than this is refused (they come from callers)."""


@dataclass(frozen=True, slots=True)
class ContextSummary:
    """A conversation's summary and the range of messages it stands for."""

    resource_id: str
    thread_id: str
    summary: str
    covered: int
    covered_hash: str
    first_message_id: str | None = None
    last_message_id: str | None = None
    updated_at: float = 0.0
    """Seconds since the epoch (UTC) when it was stored."""


@runtime_checkable
class ContextSummaryStore(Protocol):
    """Where conversation summaries live between runs."""

    async def load_context_summary(self, resource_id: str, thread_id: str) -> ContextSummary | None: ...

    async def save_context_summary(self, summary: ContextSummary) -> None: ...


def checked_ids(resource_id: object, thread_id: object) -> tuple[str, str]:
    """The conversation's ids, or a `TypeError`/`ValueError` naming the bad one."""
    for name, value in (("resource_id", resource_id), ("thread_id", thread_id)):
        if not isinstance(value, str) or not value:
            raise TypeError(f"a context summary's {name} must be a non-empty string, got {value!r}")
        if len(value) > MAX_ID_CHARS:
            raise ValueError(f"a context summary's {name} is longer than {MAX_ID_CHARS} characters")
    return str(resource_id), str(thread_id)


def checked_summary(summary: object) -> ContextSummary:
    """`summary` when it is a well-formed `ContextSummary`, else an error naming what is wrong."""
    if not isinstance(summary, ContextSummary):
        raise TypeError(f"save_context_summary takes a ContextSummary, got {type(summary).__name__}")
    checked_ids(summary.resource_id, summary.thread_id)
    if not isinstance(summary.summary, str) or len(summary.summary) > MAX_SUMMARY_CHARS:
        raise ValueError(f"a context summary must be a string of at most {MAX_SUMMARY_CHARS} characters")
    if isinstance(summary.covered, bool) or not isinstance(summary.covered, int) or summary.covered < 1:
        raise ValueError(f"a context summary must cover at least one message, got {summary.covered!r}")
    if not isinstance(summary.covered_hash, str) or not summary.covered_hash:
        raise ValueError("a context summary needs the digest of the messages it covers")
    return summary


class InMemoryContextSummaryStore:
    """A `ContextSummaryStore` in this process's memory (lost on restart)."""

    def __init__(self) -> None:
        self._summaries: dict[tuple[str, str], ContextSummary] = {}

    async def load_context_summary(self, resource_id: str, thread_id: str) -> ContextSummary | None:
        return self._summaries.get(checked_ids(resource_id, thread_id))

    async def save_context_summary(self, summary: ContextSummary) -> None:
        summary = checked_summary(summary)
        self._summaries[(summary.resource_id, summary.thread_id)] = summary
