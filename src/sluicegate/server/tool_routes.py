"""Tool routes: list, describe, and execute a registered tool directly."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request

from sluicegate.errors import AccessDeniedError, APICallError
from sluicegate.server.bodies import ToolExecuteBody, request_context_from
from sluicegate.server.deps import ERRORS, agent_or_404, registry_of, settings_of
from sluicegate.server.errors import ApiError, bad_request, not_found
from sluicegate.server.identity import bind_context
from sluicegate.server.serialize import tool_json
from sluicegate.server.tool_approval import refuse_unapproved
from sluicegate.stream.payload import to_json
from sluicegate.tools import Tool, ToolContext
from sluicegate.tools.tool import ToolInputError

router = APIRouter(prefix="/api/tools", tags=["tools"])
agent_router = APIRouter(prefix="/api/agents", tags=["tools"])


def _tool(request: Request, tool_id: str) -> Tool:
    tool = registry_of(request).get_tool(tool_id)
    if tool is None:
        raise not_found("tool", tool_id)
    return tool


@router.get("", responses=ERRORS)
async def list_tools(request: Request) -> dict[str, Any]:
    return {tid: tool_json(t) for tid, t in registry_of(request).tools().items()}


@router.get("/{toolId}", responses=ERRORS)
async def get_tool(toolId: str, request: Request) -> dict[str, Any]:
    return tool_json(_tool(request, toolId))


_EXECUTE_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    403: {"model": ERRORS[400]["model"], "description": "The tool requires approval (see docs/security.md)."},
    502: ERRORS[400],
}


async def _execute(tool: Tool, body: ToolExecuteBody, request: Request) -> Any:
    refuse_unapproved(tool, allowed=settings_of(request).allow_unapproved_tool_execution)
    try:
        validated = tool.validate(body.data)
    except ToolInputError as exc:
        raise bad_request("data", str(exc)) from None
    context = ToolContext(
        tool_call_id=f"call_{uuid.uuid4().hex[:16]}",
        request_context=bind_context(request, request_context_from(body.requestContext)),
        tool_name=tool.id,
    )
    try:
        return to_json(await tool.execute(validated, context))
    except AccessDeniedError:
        raise  # another resource's data: 403, not a tool failure
    except Exception as exc:
        detail = exc.public_message if isinstance(exc, APICallError) else exc
        raise ApiError(502, f"tool {tool.id!r} failed: {detail}") from None


@router.post("/{toolId}/execute", responses=_EXECUTE_ERRORS)
async def execute_tool(toolId: str, body: ToolExecuteBody, request: Request) -> Any:
    """Validate `data` against the tool's input schema and run it; returns its result. A tool
    that requires approval is refused (403) unless the server allows running it directly."""
    return await _execute(_tool(request, toolId), body, request)


def _agent_tool(request: Request, agent_id: str, tool_id: str) -> Tool:
    _, agent = agent_or_404(request, agent_id)
    tool = agent.tools.get(tool_id) or next((t for t in agent.tools.values() if t.id == tool_id), None)
    if tool is None:
        raise not_found("tool", tool_id)
    return tool


@agent_router.get("/{agentId}/tools/{toolId}", responses=ERRORS)
async def get_agent_tool(agentId: str, toolId: str, request: Request) -> dict[str, Any]:
    return tool_json(_agent_tool(request, agentId, toolId))


@agent_router.post("/{agentId}/tools/{toolId}/execute", responses=_EXECUTE_ERRORS)
async def execute_agent_tool(agentId: str, toolId: str, body: ToolExecuteBody, request: Request) -> Any:
    """Run one of the agent's tools directly (Mastra's `agent.executeTool`)."""
    return await _execute(_agent_tool(request, agentId, toolId), body, request)
