"""`POST /chat/{agentId}`: the AI SDK's chat request in, the UI message stream out.

The run starts as `/api/agents/{agentId}/stream` starts it (`agents.stream_response`: the same
body checks, identity binding, memory narrowing and span), and a decision goes through the
approval routes' own checks (`hitl_routes.decided_stream`); under `serve --temporal` both go
through the run log (`durable_routes`). Only the framing differs (`ui_stream.UIMessageStream`).

Memory: the chat `id` is the run's thread unless the body's `memory` names another. Its
resource is the caller's identity (with an identity hook), else `memory.resource`, else the
chat id itself. The path is outside `/api`, so `create_app` puts it under the bearer token and
the identity hook too.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from sluicegate.agent import Agent
from sluicegate.server.agents import stream_response
from sluicegate.server.bodies import AgentCallBody, MemoryBody, refuse_client_system
from sluicegate.server.deps import ERRORS, agent_or_404, settings_of
from sluicegate.server.errors import bad_request
from sluicegate.server.hitl_routes import decided_stream
from sluicegate.server.identity import identity_of
from sluicegate.server.protocols.ai_sdk.chat_request import ChatBody, Decision, decision_of, run_messages
from sluicegate.server.protocols.ai_sdk.ui_stream import UIMessageStream
from sluicegate.server.settings import durable_runs

router = APIRouter(tags=["AI SDK"])

PREFIX = "/chat"
"""The path `create_app` also puts under the bearer token and the identity hook."""

HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
"""What `createUIMessageStreamResponse` sends with the stream."""

_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    200: {
        "description": "The AI SDK's UI message stream: `data: <part JSON>` per part, then `data: [DONE]`.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
    404: ERRORS[404] | {"description": "No such agent, or no waiting run of this id for the caller."},
    409: ERRORS[400] | {"description": "The run is being resumed already, or the tool call is not pending."},
}


@router.post(PREFIX + "/{agentId}", responses=_RESPONSES, response_class=JSONResponse)
async def chat(
    agentId: str,
    body: ChatBody,
    request: Request,
    version: Literal["v5", "v6", "v7"] = Query(
        default="v6",
        description="The client's `ai` major: v5 gets no approval parts (it has none); v6 and later get "
        "`tool-approval-request`.",
    ),
) -> Any:
    """Answer a `useChat` / `DefaultChatTransport` request with the agent's run as a UI message
    stream; a decision in the request continues the waiting run instead. A disconnect cancels it."""
    key, agent = agent_or_404(request, agentId)
    refuse_client_system([m.get("role") for m in body.messages], settings_of(request), "messages")
    last = body.messages[-1]
    continues = last.get("id") if last.get("role") == "assistant" else None
    decision = decision_of(body)
    encoder = UIMessageStream(
        "v5" if version == "v5" else "v6",
        message_id=continues if isinstance(continues, str) and continues else None,
        error_details=agent.provider_error_details,
        declined=decision.tool_call_id if decision is not None and decision.kind == "decline" else None,
    )
    durable = durable_runs()
    if decision is not None:
        return await _decide(request, agentId, agent, body, decision, encoder, durable=durable)
    call = _call_body(agent, body, request)
    if durable:
        from sluicegate.server.durable_routes import durable_stream

        return await durable_stream(agent, call, request, encoder=encoder, headers=HEADERS)
    return await stream_response(key, agent, call, request, encoder=encoder, headers=HEADERS)


async def _decide(
    request: Request,
    agent_id: str,
    agent: Agent,
    body: ChatBody,
    decision: Decision,
    encoder: UIMessageStream,
    *,
    durable: bool,
) -> Any:
    resource = body.memory.resource if body.memory is not None else None
    if body.memory is None and agent.memory is not None and identity_of(request) is None:
        resource = body.id  # the resource the run got by default: a decision must name it too
    if durable:
        from sluicegate.server.durable_routes import durable_decision

        return await durable_decision(
            request,
            agent_id,
            decision.kind,
            run_id=decision.run_id,
            tool_call_id=decision.tool_call_id,
            resource_id=resource,
            reason=decision.reason,
            resume_data=decision.resume_data,
            encoder=encoder,
            headers=HEADERS,
        )
    return await decided_stream(
        request,
        agent,
        decision.kind,
        run_id=decision.run_id,
        tool_call_id=decision.tool_call_id,
        resource_id=resource,
        request_context=body.requestContext,
        reason=decision.reason,
        resume_data=decision.resume_data,
        encoder=encoder,
        headers=HEADERS,
    )


def _call_body(agent: Agent, body: ChatBody, request: Request) -> AgentCallBody:
    """The `/stream` body this chat request amounts to (module docstring for the memory)."""
    memory = body.memory
    identity = identity_of(request)
    pinned = identity is not None and identity.thread_id is not None
    if memory is None and body.id is not None and agent.memory is not None and not pinned:
        memory = MemoryBody(thread=body.id, resource=None if identity is not None else body.id)
    keeps_history = agent.memory is not None and (memory is not None or pinned)
    messages = run_messages(body.messages, body.trigger, thread_keeps_history=keeps_history)
    try:
        return AgentCallBody(messages=messages, memory=memory, requestContext=body.requestContext)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise bad_request(".".join(str(p) for p in error["loc"]) or "messages", error["msg"]) from None
