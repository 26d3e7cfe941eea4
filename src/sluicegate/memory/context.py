"""Which thread and resource a request's memory serves, read from the request context.

The agent sets `THREAD_ID_KEY` / `RESOURCE_ID_KEY`; `Memory.bind` also sets Mastra's
`MastraMemory` entry (`{"thread": {"id"}, "resourceId", "memoryConfig": {"readOnly"}}`), so the
memory processors work the same whether `Memory` built them or a user placed them by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext

MEMORY_CONTEXT_KEY = "MastraMemory"


@dataclass(frozen=True)
class MemoryContext:
    thread_id: str | None
    resource_id: str | None
    read_only: bool = False


def memory_context(request_context: RequestContext | None) -> MemoryContext:
    """The thread, resource and read-only flag of this request (all empty without memory)."""
    if request_context is None:
        return MemoryContext(None, None)
    entry: Any = request_context.get(MEMORY_CONTEXT_KEY) or {}
    thread = entry.get("thread") if isinstance(entry, dict) else None
    config = entry.get("memoryConfig") if isinstance(entry, dict) else None
    thread_id = request_context.get(THREAD_ID_KEY) or (
        thread.get("id") if isinstance(thread, dict) else thread
    )
    resource_id = request_context.get(RESOURCE_ID_KEY) or (
        entry.get("resourceId") if isinstance(entry, dict) else None
    )
    read_only = bool(config.get("readOnly") or config.get("read_only")) if isinstance(config, dict) else False
    return MemoryContext(thread_id, resource_id, read_only)


def set_memory_context(
    request_context: RequestContext, *, thread_id: str, resource_id: str, read_only: bool
) -> None:
    request_context.set(THREAD_ID_KEY, thread_id)
    request_context.set(RESOURCE_ID_KEY, resource_id)
    request_context.set(
        MEMORY_CONTEXT_KEY,
        {
            "thread": {"id": thread_id},
            "resourceId": resource_id,
            "memoryConfig": {"readOnly": read_only},
        },
    )
