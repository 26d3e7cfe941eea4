"""`POST /api/v1/responses`, `GET` and `DELETE /api/v1/responses/{id}`: OpenAI's Responses API
in Mastra's shape (`agent_id` picks the agent), over the same run as `/stream`.

A run starts through `agents.start_stream` (the body's options checked and bound to the
caller's identity, as on every route) and its chunks, after the output processors, become the
response's events (`events.ResponseEvents`); `stream: false` reads the same events to their end
and answers the final response object. `store: true` keeps the turn in the agent's memory and a
record (`store.py`) that `previous_response_id` continues and `GET` returns; an answer to an
`mcp_approval_request` continues the waiting run (`approve_tool_call` / `decline_tool_call`).
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from opentelemetry import trace
from pydantic import ValidationError

from sluicegate.agent import Agent
from sluicegate.server.agents import run_to_end, span_attributes
from sluicegate.server.bodies import AgentCallBody, refuse_client_system
from sluicegate.server.deps import ERRORS, agent_or_404, registry_of, settings_of
from sluicegate.server.errors import ApiError, bad_request
from sluicegate.server.identity import identity_of
from sluicegate.server.mastra.observability import mark_conversation
from sluicegate.server.protocols.responses import runs, store
from sluicegate.server.protocols.responses.body import ApprovalAnswer, ResponsesBody, read_input
from sluicegate.server.protocols.responses.events import ResponseEvents
from sluicegate.server.serialize import model_parts, schema_json
from sluicegate.server.streaming import ChunkStreamResponse, EncodedFrames
from sluicegate.server.traces import run_span, start_request_span, trace_headers
from sluicegate.storage.base import MemoryStore

router = APIRouter(prefix="/api/v1", tags=["responses"])

_SSE: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    200: {
        "description": "The response object; with `stream: true`, its events as server-sent "
        "events (`data: <event JSON>`), then `data: [DONE]`.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
}


_RUN_FIELDS = {"memory.thread": "conversation_id", "requestContext": "requestContext"}
"""Where a run option the body became came from, to name it in an error."""


def _stores(request: Request) -> list[MemoryStore]:
    """Every store a response may be kept in: the agents' memory stores and the registry's."""
    registry = registry_of(request)
    found: list[MemoryStore] = []
    for candidate in (
        registry.storage,
        *(getattr(a.memory, "storage", None) for a in registry.agents.values()),
    ):
        if isinstance(candidate, MemoryStore) and all(candidate is not s for s in found):
            found.append(candidate)
    return found


def _caller(request: Request) -> str | None:
    identity = identity_of(request)
    return identity.resource_id if identity is not None else None


def _unknown(response_id: str, field: str = "responseId") -> ApiError:
    return ApiError(404, f"{field}: no stored response {response_id!r}", field=field)


async def _memory_for(
    agent: Agent, body: ResponsesBody, previous: store.StoredResponse | None, caller: str | None
) -> dict[str, str] | None:
    """The memory thread the turn runs on: the previous response's, the conversation named, or
    a new one when the turn is stored."""
    conversation = body.conversation_ref()
    if previous is not None:
        if conversation is not None and conversation != previous.thread_id:
            raise bad_request(
                "conversation_id", "previous_response_id and conversation_id name different conversations"
            )
        return {"thread": previous.thread_id, "resource": previous.owner}
    memory_store = getattr(agent.memory, "storage", None)
    if (conversation is not None or body.store) and not isinstance(memory_store, MemoryStore):
        field = "store" if body.store else "conversation_id"
        raise bad_request(field, "stored responses and conversations need an agent with memory")
    if conversation is not None:
        assert isinstance(memory_store, MemoryStore)
        thread = await memory_store.get_thread(conversation)
        if thread is None or (caller is not None and thread.resource_id != caller):
            raise ApiError(404, f"conversation_id: no conversation {conversation!r}", field="conversation_id")
        return {"thread": thread.id, "resource": thread.resource_id}
    if body.store:
        thread_id = str(uuid.uuid4())
        return {"thread": thread_id, "resource": caller or thread_id}
    return None


def _call_body(
    body: ResponsesBody, messages: list[dict[str, Any]], memory: dict[str, str] | None
) -> AgentCallBody:
    data: dict[str, Any] = {"messages": messages}
    if memory is not None:
        data["memory"] = memory
    if body.instructions is not None:
        data["instructions"] = body.instructions
    schema = body.output_schema()
    if schema is not None:
        data["structuredOutput"] = {"schema": schema}
    if body.model_settings() is not None:
        data["modelSettings"] = body.model_settings()
    if body.requestContext is not None:
        data["requestContext"] = body.requestContext
    try:
        return AgentCallBody.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _RUN_FIELDS.get(".".join(str(p) for p in first["loc"]), "input")
        raise bad_request(where, str(first.get("msg"))) from None


def _tools(agent: Agent) -> list[dict[str, Any]]:
    """The agent's tools as the response's `tools` (function tools the server runs)."""
    tools: list[dict[str, Any]] = []
    for name, tool in (agent.tools or {}).items():
        tools.append(
            {
                "type": "function",
                "name": name,
                "description": getattr(tool, "description", None),
                "parameters": schema_json(getattr(tool, "input_schema", None)),
                "strict": False,
            }
        )
    return tools


async def _decide(
    request: Request,
    agent: Agent,
    body: ResponsesBody,
    previous: store.StoredResponse,
    answers: list[ApprovalAnswer],
) -> Any:
    """The waiting run continued by the one answer `input` holds."""
    if len(answers) != 1:
        raise bad_request("input", "answer one mcp_approval_request per request")
    answer = answers[0]
    if previous.run_id is None or answer.tool_call_id not in previous.pending:
        raise bad_request(
            "input.0.approval_request_id",
            f"{answer.tool_call_id!r} is not an approval request of response {previous.id!r} that waits",
        )
    return await runs.decide(
        request,
        agent,
        run_id=previous.run_id,
        tool_call_id=answer.tool_call_id,
        approve=answer.approve,
        reason=answer.reason,
        resource=previous.owner,
        request_context=body.requestContext,
    )


@router.post("/responses", responses=_SSE, response_class=JSONResponse)
async def create_response(body: ResponsesBody, request: Request) -> Any:
    """Run an agent on `input` and answer as OpenAI's Responses API does."""
    caller = _caller(request)
    stores = _stores(request)
    previous: store.StoredResponse | None = None
    previous_store: MemoryStore | None = None
    if body.previous_response_id is not None:
        found = await store.find(stores, body.previous_response_id, caller)
        if found is None:
            raise _unknown(body.previous_response_id, "previous_response_id")
        previous_store, previous = found
    agent_id = body.agent_id or (previous.agent_id if previous is not None else None)
    if agent_id is None:
        raise bad_request("agent_id", "name the agent (or a previous_response_id of a stored response)")
    key, agent = agent_or_404(request, agent_id)
    if previous is not None and previous.agent_id != key:
        raise bad_request("agent_id", "previous_response_id was answered by another agent")
    messages, answers = read_input(body.input)
    if isinstance(body.input, list):
        refuse_client_system([item.get("role") for item in body.input], settings_of(request), "input")
    if answers and messages:
        raise bad_request("input", "send an mcp_approval_response alone, without messages")
    if answers and previous is None:
        raise bad_request(
            "previous_response_id", "an mcp_approval_response answers a stored response: name it"
        )
    memory = await _memory_for(agent, body, previous, caller)
    response_id = store.new_response_id()
    base: dict[str, Any] = {
        "id": response_id,
        "model": body.model or "/".join(model_parts(agent)),
        "instructions": body.instructions,
        "previous_response_id": body.previous_response_id,
        "store": body.store,
        "metadata": body.metadata or {},
        "tools": _tools(agent),
        "temperature": body.temperature,
        "top_p": body.top_p,
        "max_output_tokens": body.max_output_tokens,
    }
    if memory is not None:
        base["conversation"] = {"id": memory["thread"]}
    if body.text is not None and body.text.format is not None:
        base["text"] = {"format": body.text.format.model_dump(by_alias=True, exclude_none=True)}
    span = start_request_span(f"POST responses {agent.name}", span_attributes(request, key))
    mark_conversation(span, memory)
    try:
        with trace.use_span(span, end_on_exit=False):
            if answers:
                assert previous is not None and previous_store is not None
                output = await _decide(request, agent, body, previous, answers)
                await store.settle(previous_store, previous)
            else:
                output = await runs.start(agent, _call_body(body, messages, memory), request)
    except BaseException:
        span.end()
        raise
    record_store = getattr(agent.memory, "storage", None)

    async def keep(events: ResponseEvents) -> None:
        if not body.store or memory is None or not isinstance(record_store, MemoryStore):
            return
        record = store.StoredResponse(
            id=response_id,
            owner=memory["resource"],
            agent_id=key,
            thread_id=memory["thread"],
            response=events.response,
            run_id=events.run_id if events.pending else None,
            pending=tuple(events.pending),
        )
        await store.save(record_store, record)

    translator = ResponseEvents(base, error_details=agent.provider_error_details, on_end=keep)
    events = translator.frames(output.full_stream)
    if body.stream:
        return ChunkStreamResponse(
            events,
            run_id=output.run_id,
            timeout=settings_of(request).request_timeout,
            headers=trace_headers(span),
            span=lambda: run_span(span),
            error_details=agent.provider_error_details,
            encoder=EncodedFrames(translator.error_frame),
            done=b"",  # as OpenAI and Mastra end it: no `[DONE]` (JSON-only SSE readers choke on it)
        )

    async def collect() -> dict[str, Any]:
        with run_span(span):
            async for _ in events:
                pass
        return translator.response

    return JSONResponse(await run_to_end(request, collect()), headers=trace_headers(span))


@router.get("/responses/{responseId}", responses=ERRORS)
async def get_response(responseId: str, request: Request) -> dict[str, Any]:
    """A stored response (404 for an unknown id, or one stored for another caller)."""
    found = await store.find(_stores(request), responseId, _caller(request))
    if found is None:
        raise _unknown(responseId)
    return found[1].response


@router.delete("/responses/{responseId}", responses=ERRORS)
async def delete_response(responseId: str, request: Request) -> dict[str, Any]:
    """Forget a stored response: it can no longer be read or continued (the conversation's
    messages stay in its memory thread)."""
    found = await store.find(_stores(request), responseId, _caller(request))
    if found is None:
        raise _unknown(responseId)
    await found[0].delete_thread(responseId)
    return {"id": responseId, "object": "response", "deleted": True}
