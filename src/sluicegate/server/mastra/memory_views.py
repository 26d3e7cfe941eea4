"""Mastra's memory views for Studio: status, configuration and working memory of an agent.

`GET /api/memory/status` says whether the agent has memory (`{result}`), `GET /api/memory/config`
shows its options in Mastra's camelCase, and `/api/memory/threads/{threadId}/working-memory`
reads and replaces the working memory the agent's `Memory` keeps (per thread or per resource, as
configured). Working memory is written only where the agent has it enabled: the route never
turns on a feature the application did not configure.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import Field

from sluicegate.memory.errors import ThreadAccessError
from sluicegate.processors.builtin.working_memory import read_working_memory, write_working_memory
from sluicegate.processors.memory import Memory, MemoryOptions
from sluicegate.server.bodies import _Body
from sluicegate.server.deps import ERRORS, agent_or_404
from sluicegate.server.errors import bad_request, not_found
from sluicegate.server.identity import bound_resource, bound_thread

router = APIRouter(prefix="/api/memory", tags=["memory"], responses=ERRORS)

_AgentId = Query(min_length=1, max_length=256)
_Optional = Query(default=None, min_length=1, max_length=256)


def _memory(request: Request, agent_id: str) -> Memory | None:
    _, agent = agent_or_404(request, agent_id)
    memory = agent.memory
    return memory if isinstance(memory, Memory) else None


def _required(request: Request, agent_id: str) -> Memory:
    memory = _memory(request, agent_id)
    if memory is None:
        raise bad_request("agentId", "this agent has no memory")
    return memory


def config_json(options: MemoryOptions) -> dict[str, Any]:
    """`MemoryOptions` in the camelCase of Mastra's merged thread config."""
    recall = options.semantic_recall
    working = options.working_memory
    template = working.template
    return {
        "lastMessages": options.last_messages,
        "semanticRecall": False
        if recall is None
        else {
            "topK": recall.top_k,
            "messageRange": recall.message_range,
            "scope": recall.scope,
            **({"threshold": recall.threshold} if recall.threshold is not None else {}),
        },
        "workingMemory": {
            "enabled": working.enabled,
            "scope": working.scope,
            **(
                {"template": template if isinstance(template, str) else json.dumps(template)}
                if template
                else {}
            ),
        },
        "readOnly": options.read_only,
        "observationalMemory": {"enabled": False},
    }


@router.get("/status", responses=ERRORS)
async def memory_status(request: Request, agentId: str = _AgentId) -> dict[str, Any]:
    """Whether the agent keeps memory (no observational memory here); `memoryType: "local"`:
    the agent's own memory, not a gateway's."""
    _, agent = agent_or_404(request, agentId)
    if agent.memory is None:
        return {"result": False}
    return {"result": True, "memoryType": "local"}


@router.get("/config", responses=ERRORS)
async def memory_config(request: Request, agentId: str = _AgentId) -> dict[str, Any]:
    """The agent's memory options. Studio asks for every agent: one without memory (or whose
    memory is not a `Memory`, with no options to show) gets `{config: null}`, where Mastra
    answers 400 "Memory is not initialized", which Studio would show as a failed request."""
    memory = _memory(request, agentId)
    if memory is None:
        return {"config": None}
    return {"config": config_json(memory.options)}


@router.get("/threads/{threadId}/working-memory", responses=ERRORS)
async def get_working_memory(
    threadId: str, request: Request, agentId: str = _AgentId, resourceId: str | None = _Optional
) -> dict[str, Any]:
    """The thread's (or its resource's) working memory and template, Mastra's shape; for an
    agent without memory, none (Mastra answers 400, which Studio asks for regardless)."""
    resource = bound_resource(request, resourceId, "resourceId")
    bound_thread(request, threadId, "threadId")
    memory = _memory(request, agentId)
    if memory is None:
        return {
            "workingMemory": None,
            "source": "thread",
            "workingMemoryTemplate": None,
            "threadExists": False,
        }
    thread = await memory.storage.get_thread(threadId)
    if thread is not None and resource is not None and thread.resource_id != resource:
        raise not_found("thread", threadId)
    working = memory.options.working_memory
    owner = resource or (thread.resource_id if thread is not None else None)
    value = None
    if working.enabled:
        value = await read_working_memory(
            memory.storage, scope=working.scope, thread_id=threadId, resource_id=owner
        )
    template = working.template
    shown_template = None
    if working.enabled and template is not None:
        shown_template = (
            {"format": "markdown", "content": template}
            if isinstance(template, str)
            else {"format": "json", "content": json.dumps(template)}
        )
    return {
        "workingMemory": value,
        "source": "resource" if working.scope == "resource" and owner else "thread",
        "workingMemoryTemplate": shown_template,
        "threadExists": thread is not None,
    }


class WorkingMemoryBody(_Body):
    workingMemory: str = Field(max_length=100_000)
    resourceId: str | None = Field(default=None, min_length=1, max_length=256)
    memoryConfig: dict[str, Any] | None = None


@router.post("/threads/{threadId}/working-memory", responses=ERRORS)
async def update_working_memory(
    threadId: str, body: WorkingMemoryBody, request: Request, agentId: str = _AgentId
) -> dict[str, Any]:
    """Replace the working memory, where the agent has it enabled."""
    resource = bound_resource(request, body.resourceId, "resourceId")
    bound_thread(request, threadId, "threadId")
    memory = _required(request, agentId)
    if body.memoryConfig:
        raise bad_request(
            "memoryConfig", "the agent's memory options are the application's; none may be sent"
        )
    working = memory.options.working_memory
    if not working.enabled:
        raise bad_request("workingMemory", "working memory is not enabled for this agent")
    thread = await memory.storage.get_thread(threadId)
    if thread is None or (resource is not None and thread.resource_id != resource):
        raise not_found("thread", threadId)
    try:
        await write_working_memory(
            memory.storage,
            body.workingMemory,
            scope=working.scope,
            thread_id=threadId,
            resource_id=resource or thread.resource_id,
        )
    except ThreadAccessError:
        raise not_found("thread", threadId) from None
    return {"success": True}
