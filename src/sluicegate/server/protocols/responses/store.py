"""Stored responses (`store: true`): what `GET /api/v1/responses/{id}` answers and what
`previous_response_id` continues.

A record lives in the agent's memory storage as a thread of its own, whose id is the response
id and whose resource is `RECORD_RESOURCE_PREFIX + owner`: one row per response (no shared row
that two requests would race to rewrite), found by id in one read, and never listed among the
owner's conversations (`list_threads(owner)`). The conversation itself (the turn's messages) is
the memory thread the run used, named in the record.

The owner is the resource the turn ran for: the identity hook's resource when the application
has one, so another caller's lookup answers 404 as an unknown id does.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sluicegate.storage.base import MemoryStore
from sluicegate.storage.types import Thread

RECORD_RESOURCE_PREFIX = "sluicegate__responses:"
_KEY = "sluicegate.response"
ID_PREFIX = "resp_"


def new_response_id() -> str:
    return ID_PREFIX + uuid.uuid4().hex


@dataclass
class StoredResponse:
    """One stored response: the Responses API object, and what continuing it needs."""

    id: str
    owner: str
    agent_id: str
    thread_id: str
    response: dict[str, Any]
    run_id: str | None = None
    """The run waiting for approval (its `mcp_approval_request` items), if it waits."""
    pending: tuple[str, ...] = ()
    """The tool call ids that wait for an `mcp_approval_response`."""

    def metadata(self) -> dict[str, Any]:
        return {
            _KEY: {
                "owner": self.owner,
                "agentId": self.agent_id,
                "threadId": self.thread_id,
                "response": self.response,
                "runId": self.run_id,
                "pending": list(self.pending),
            }
        }

    @classmethod
    def from_thread(cls, thread: Thread) -> StoredResponse | None:
        data = thread.metadata.get(_KEY)
        if not isinstance(data, dict) or not thread.resource_id.startswith(RECORD_RESOURCE_PREFIX):
            return None
        owner = data.get("owner")
        if not isinstance(owner, str) or thread.resource_id != RECORD_RESOURCE_PREFIX + owner:
            return None
        return cls(
            id=thread.id,
            owner=owner,
            agent_id=str(data.get("agentId")),
            thread_id=str(data.get("threadId")),
            response=dict(data.get("response") or {}),
            run_id=data.get("runId") if isinstance(data.get("runId"), str) else None,
            pending=tuple(str(p) for p in data.get("pending") or ()),
        )


async def save(store: MemoryStore, record: StoredResponse) -> None:
    """Keep `record` (the id is new: a record is written once)."""
    await store.create_thread(
        Thread(id=record.id, resource_id=RECORD_RESOURCE_PREFIX + record.owner, metadata=record.metadata())
    )


async def find(
    stores: list[MemoryStore], response_id: str, owner: str | None
) -> tuple[MemoryStore, StoredResponse] | None:
    """The record `response_id` names and the store holding it, if `owner` may see it (None:
    the server has no identity hook and trusts its clients)."""
    if not response_id.startswith(ID_PREFIX) or len(response_id) > 64:
        return None
    for store in stores:
        thread = await store.get_thread(response_id)
        if thread is None:
            continue
        record = StoredResponse.from_thread(thread)
        if record is None or (owner is not None and record.owner != owner):
            return None
        return store, record
    return None


async def settle(store: MemoryStore, record: StoredResponse) -> None:
    """Mark `record`'s approvals as answered, so the same request cannot be answered twice."""
    record.run_id = None
    record.pending = ()
    await store.update_thread(record.id, metadata=record.metadata())
