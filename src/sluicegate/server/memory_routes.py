"""Memory routes: threads by resource (and agent), and a thread's messages.

A thread records the agent that started it in `metadata.agentId`; listing with `agentId` leaves
out the threads of other agents (threads without the key, made by other clients, are listed).

Threads live in the agent's memory store (`?agentId=`) or the registry's `storage`; the server
keeps none of them itself. A `resourceId` given on a thread route must own the thread, and a
thread of another resource answers 404 with the body an unknown id gets. Creating a thread whose
id another resource owns is the 409 of `thread_unavailable`, the same on every route. With an
identity hook every route works on the authenticated resource (and pinned thread): naming
another one is a 403.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from fastapi import APIRouter, Query, Request

from sluicegate.messages import MessageList
from sluicegate.server.bodies import CreateThreadBody, UpdateThreadBody
from sluicegate.server.deps import ERRORS, registry_of
from sluicegate.server.errors import bad_request, not_found, thread_unavailable
from sluicegate.server.identity import bound_resource, bound_thread
from sluicegate.storage.base import MemoryStore
from sluicegate.storage.types import Thread

router = APIRouter(prefix="/api/memory", tags=["memory"])

MAX_PAGE = 1000
MESSAGES_PER_PAGE = 40
"""A thread's messages per page when the request does not say (Mastra's default)."""


AGENT_KEY = "agentId"
"""The thread metadata key naming the agent that started the thread (`Memory` sets it)."""


def _agent_key(request: Request, agent_id: str | None) -> str | None:
    """The `id` of the agent `agentId` names (the registry key may differ from it)."""
    agent = registry_of(request).get_agent(agent_id) if agent_id else None
    return agent.id if agent is not None else None


def _store(request: Request, agent_id: str | None) -> MemoryStore:
    registry = registry_of(request)
    if agent_id and registry.get_agent(agent_id) is None:
        raise not_found("agent", agent_id)
    store = registry.storage_for(agent_id)
    if store is None:
        raise bad_request("agentId", "no memory storage is configured for this agent or server")
    return store


async def _thread(request: Request, store: MemoryStore, thread_id: str, resource_id: str | None) -> Thread:
    """The thread, checked against the request's resource (the authenticated one with an
    identity hook, else the `resourceId` given, if any)."""
    resource_id = bound_resource(request, resource_id, "resourceId")
    bound_thread(request, thread_id, "threadId")
    thread = await store.get_thread(thread_id)
    if thread is None or (resource_id is not None and thread.resource_id != resource_id):
        raise not_found("thread", thread_id)
    return thread


def _page(items: list[Any], page: int, per_page: int) -> tuple[list[Any], bool]:
    start = page * per_page
    return items[start : start + per_page], start + per_page < len(items)


@router.get("/threads", responses=ERRORS)
async def list_threads(
    request: Request,
    resourceId: str | None = Query(
        default=None,
        min_length=1,
        max_length=256,
        description="Whose threads; required unless an identity hook binds the request.",
    ),
    agentId: str | None = Query(default=None, max_length=256),
    page: int = Query(default=0, ge=0, le=1_000_000),
    perPage: int = Query(default=100, ge=1, le=MAX_PAGE),
    order_field: Literal["createdAt", "updatedAt"] = Query(default="updatedAt", alias="orderBy[field]"),
    order_direction: Literal["ASC", "DESC"] = Query(default="DESC", alias="orderBy[direction]"),
) -> dict[str, Any]:
    """A resource's threads, newest first by default, paginated like Mastra. With `agentId`,
    only that agent's: threads another agent started (their `metadata.agentId`) are left out,
    so agents sharing one store do not list each other's conversations."""
    resource_id = bound_resource(request, resourceId, "resourceId")
    if resource_id is None:
        raise bad_request("resourceId", "required")
    pinned = bound_thread(request, None, "threadId")
    store = _store(request, agentId)
    threads = await store.list_threads(resource_id)
    if pinned is not None:
        threads = [t for t in threads if t.id == pinned]
    owner = _agent_key(request, agentId)
    if owner is not None:
        threads = [t for t in threads if t.metadata.get(AGENT_KEY, owner) == owner]
    key = "created_at" if order_field == "createdAt" else "updated_at"
    threads.sort(key=lambda t: getattr(t, key), reverse=order_direction == "DESC")
    shown, more = _page(threads, page, perPage)
    return {
        "threads": [t.to_dict() for t in shown],
        "total": len(threads),
        "page": page,
        "perPage": perPage,
        "hasMore": more,
    }


@router.post("/threads", responses={**ERRORS, 409: ERRORS[400]})
async def create_thread(
    body: CreateThreadBody, request: Request, agentId: str | None = Query(default=None, max_length=256)
) -> dict[str, Any]:
    resource_id = bound_resource(request, body.resourceId, "resourceId")
    if resource_id is None:
        raise bad_request("resourceId", "required")
    thread_id = bound_thread(request, body.threadId, "threadId") or str(uuid.uuid4())
    store = _store(request, agentId or body.agentId)
    metadata = dict(body.metadata or {})
    owner = _agent_key(request, agentId or body.agentId)
    if owner is not None:
        metadata.setdefault(AGENT_KEY, owner)
    wanted = Thread(id=thread_id, resource_id=resource_id, title=body.title or "", metadata=metadata)
    stored = await store.create_thread(wanted)
    if stored.resource_id != resource_id:
        raise thread_unavailable("threadId", thread_id)
    return stored.to_dict()


@router.get("/threads/{threadId}", responses=ERRORS)
async def get_thread(
    threadId: str,
    request: Request,
    agentId: str | None = Query(default=None, max_length=256),
    resourceId: str | None = Query(default=None, max_length=256),
) -> dict[str, Any]:
    return (await _thread(request, _store(request, agentId), threadId, resourceId)).to_dict()


@router.patch("/threads/{threadId}", responses=ERRORS)
async def update_thread(
    threadId: str,
    body: UpdateThreadBody,
    request: Request,
    agentId: str | None = Query(default=None, max_length=256),
) -> dict[str, Any]:
    store = _store(request, agentId)
    await _thread(request, store, threadId, body.resourceId)
    updated = await store.update_thread(threadId, title=body.title, metadata=body.metadata)
    return updated.to_dict()


@router.delete("/threads/{threadId}", responses=ERRORS)
async def delete_thread(
    threadId: str,
    request: Request,
    agentId: str | None = Query(default=None, max_length=256),
    resourceId: str | None = Query(default=None, max_length=256),
) -> dict[str, Any]:
    store = _store(request, agentId)
    await _thread(request, store, threadId, resourceId)
    await store.delete_thread(threadId)
    return {"result": "Thread deleted"}


@router.get("/threads/{threadId}/messages", responses=ERRORS)
async def list_messages(
    threadId: str,
    request: Request,
    agentId: str | None = Query(default=None, max_length=256),
    resourceId: str | None = Query(default=None, max_length=256),
    page: int = Query(default=0, ge=0, le=1_000_000),
    perPage: int = Query(default=MESSAGES_PER_PAGE, ge=1, le=MAX_PAGE),
) -> dict[str, Any]:
    """A thread's messages in creation order (Mastra's stored shape, each with its `type`, and
    as UI messages, where Mastra sends `uiMessages: null`)."""
    store = _store(request, agentId)
    await _thread(request, store, threadId, resourceId)
    messages = await store.list_messages(threadId)
    shown, more = _page(messages, page, perPage)
    ui = MessageList()
    ui.add(shown, "memory")
    return {
        "messages": [{**m.to_dict(), "type": m.type or "text"} for m in shown],
        "uiMessages": ui.get.all.ui(),
        "total": len(messages),
        "page": page,
        "perPage": perPage,
        "hasMore": more,
    }
