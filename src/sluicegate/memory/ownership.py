"""Who may read and write a thread: the checks every memory processor makes, whether `Memory`
built it or it was placed by hand.

A thread belongs to the resource that created it, for its whole life; a stored message belongs to
its thread. A request names its thread and resource in the request context, and these checks
refuse (with `ThreadAccessError` / `MessageOwnershipError`) instead of reading or writing data of
another resource.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sluicegate.errors import MessageOwnershipError
from sluicegate.memory.context import MemoryContext, memory_context
from sluicegate.memory.errors import MemoryConfigurationError, ThreadAccessError
from sluicegate.messages.message import Message
from sluicegate.request_context import RequestContext
from sluicegate.storage.base import MemoryStore
from sluicegate.storage.types import Thread

_CHECKED = "__sluicegate_owner_checked"
"""Key in a processor's per-run state: the (thread, resource) pair already verified this run."""


def _require_resource(where: MemoryContext) -> str:
    if not where.resource_id:
        raise MemoryConfigurationError(
            f"thread {where.thread_id!r} is named without a resource id; memory processors need both "
            "(RESOURCE_ID_KEY in the request context, or memory={'thread': ..., 'resource': ...})"
        )
    return where.resource_id


async def readable_context(
    storage: MemoryStore, request_context: RequestContext | None, state: dict[str, Any] | None = None
) -> MemoryContext:
    """The request's memory context, after checking that its thread (when it exists) belongs to
    its resource. Checked once per run when `state` (the processor's run state) is given."""
    where = memory_context(request_context)
    if not where.thread_id:
        return where
    resource_id = _require_resource(where)
    pair = (where.thread_id, resource_id)
    if state is not None and state.get(_CHECKED) == pair:
        return where
    thread = await storage.get_thread(where.thread_id)
    if thread is not None and thread.resource_id != resource_id:
        raise ThreadAccessError(where.thread_id, resource_id)
    if thread is not None and state is not None:
        state[_CHECKED] = pair
    return where


async def writable_context(
    storage: MemoryStore, request_context: RequestContext | None, state: dict[str, Any] | None = None
) -> MemoryContext:
    """As `readable_context`, and the thread is created for the resource when it is new, so its
    owner is fixed before anything is written into it."""
    where = memory_context(request_context)
    if not where.thread_id:
        return where
    resource_id = _require_resource(where)
    pair = (where.thread_id, resource_id)
    if state is not None and state.get(_CHECKED) == pair:
        return where
    thread = await storage.create_thread(Thread(id=where.thread_id, resource_id=resource_id))
    if thread.resource_id != resource_id:
        raise ThreadAccessError(where.thread_id, resource_id)
    if state is not None:
        state[_CHECKED] = pair
    return where


async def check_message_ids(storage: MemoryStore, messages: Sequence[Message], where: MemoryContext) -> None:
    """Refuse input messages whose ids are already stored in another thread (ids may come from
    the client, so an id can name another user's message)."""
    ids = [m.id for m in messages]
    if not ids or not where.thread_id:
        return
    for message_id, (thread_id, resource_id) in (await storage.message_owners(ids)).items():
        if thread_id != where.thread_id or (
            resource_id is not None and where.resource_id is not None and resource_id != where.resource_id
        ):
            raise MessageOwnershipError(message_id, where.thread_id)
