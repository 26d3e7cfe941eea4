"""`POST /api/agents/{agentId}/ag-ui`: AG-UI's `RunAgentInput` in, the run's events out (SSE).

A run starts as `/stream` starts one (the same body checks, identity binding and refusals, through
`AgentCallBody`); its chunks are read after the output processors, so what a guardrail redacted,
held back or tripped on is the same here as on every route. The client's next input continues a
run that stopped: `resume` entries answer its interrupts (an approval: `{"approved": bool,
"reason"?}`; a suspended tool: the data it resumes with; `cancelled`: declined), and tool
messages answer the frontend tool calls it left. Without an identity hook the thread's resource
is the thread id itself (as `@ag-ui/mastra` does without a `resourceId`); with one, the
identity's.

A client that disconnects cancels the run, as on `/stream`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from opentelemetry import trace

from sluicegate.agent import Agent
from sluicegate.errors import MissingExtraError
from sluicegate.memory.errors import ThreadAccessError
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.server.agents import check_memory_owner, run_error
from sluicegate.server.bodies import (
    AgentCallBody,
    MemoryBody,
    ResumeStreamBody,
    ToolDecisionBody,
    call_options,
    narrow_memory_options,
    narrow_retries,
)
from sluicegate.server.deps import ERRORS, agent_or_404, settings_of
from sluicegate.server.errors import ApiError, bad_request, thread_unavailable
from sluicegate.server.hitl_routes import decision_error
from sluicegate.server.identity import bind_context, bind_run, bound_resource, bound_thread, identity_of
from sluicegate.server.plain_json import find_problem
from sluicegate.server.protocols.ag_ui.events import EventStream
from sluicegate.server.protocols.ag_ui.messages import frontend_tools, to_messages, trailing_results
from sluicegate.server.settings import durable_runs
from sluicegate.server.streaming import ChunkStreamResponse, EncodedFrames
from sluicegate.server.traces import (
    AGENT_ID,
    RESOURCE_ID,
    SERVER_APP,
    run_span,
    start_request_span,
    trace_headers,
)
from sluicegate.tools import Tool

router = APIRouter(prefix="/api/agents", tags=["AG-UI"])

MAX_ID_CHARS = 256
CONTEXT_KEY = "ag-ui"
"""The request-context key holding the input's `state` and `context` (for tools and processors)."""

Start = Callable[[], Awaitable[Any]]


def protocol() -> ModuleType:
    """`ag_ui.core`, or 503 naming the extra that brings it."""
    try:
        import ag_ui.core as core
    except ImportError:
        error = MissingExtraError("ag-ui-protocol", extra="ag-ui", feature="The AG-UI route")
        raise ApiError(503, str(error)) from None
    return core


async def read_input(request: Request, core: ModuleType) -> Any:
    """The body as a `RunAgentInput`: plain JSON, the package's model, bounded ids (400 naming
    the field otherwise)."""
    import pydantic

    try:
        data = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError):
        raise bad_request("body", "not a JSON document") from None
    except RecursionError:
        raise bad_request("body", "nested too deeply") from None
    problem = find_problem(data)
    if problem is not None:
        raise bad_request(*problem)
    if not isinstance(data, dict):
        raise bad_request("body", "must be a RunAgentInput object")
    try:
        given = core.RunAgentInput.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise bad_request(".".join(str(p) for p in first["loc"]) or "body", first["msg"]) from None
    for field, value in (("threadId", given.thread_id), ("runId", given.run_id)):
        if not value or len(value) > MAX_ID_CHARS:
            raise bad_request(field, f"must be 1 to {MAX_ID_CHARS} characters")
    return given


class Caller:
    """Who the run is for: its thread and resource (bound to the identity when there is one)
    and its request context."""

    def __init__(self, request: Request, agent: Agent, given: Any) -> None:
        thread = bound_thread(request, given.thread_id, "threadId")
        self.thread = thread if agent.memory is not None else None
        self.resource = bound_resource(request, None, "resourceId") or given.thread_id
        self.context_data: dict[str, Any] = {}
        if given.state is not None:
            self.context_data["state"] = given.state
        if given.context:
            self.context_data["context"] = [c.model_dump(by_alias=True) for c in given.context]
        self.request = request

    def owner(self) -> str | None:
        """The run's resource as it was started: the thread's, or none without memory."""
        return self.resource if self.thread is not None else None

    def memory(self) -> dict[str, str] | None:
        return {"thread": self.thread, "resource": self.resource} if self.thread is not None else None

    def context(self) -> RequestContext:
        context = bind_context(self.request, RequestContext())
        if self.context_data:
            context.set(CONTEXT_KEY, self.context_data)
        if self.thread is None and context.get(RESOURCE_ID_KEY) is None:
            return context
        context.set(RESOURCE_ID_KEY, self.resource)
        return context


async def _start_run(
    request: Request, agent: Agent, given: Any, caller: Caller, tools: dict[str, Tool]
) -> Any:
    """A new run of the input's conversation, started as `/stream` starts one (a workflow
    under `serve --temporal`, as that route's)."""
    settings = settings_of(request)
    messages = to_messages(given.messages, allow_system=settings.allow_client_overrides)
    memory = MemoryBody(thread=caller.thread, resource=caller.resource) if caller.thread else None
    body = AgentCallBody(
        messages=messages,
        memory=memory,
        requestContext={CONTEXT_KEY: caller.context_data} if caller.context_data else None,
    )
    if durable_runs():
        from sluicegate.server.durable_routes import start_observed

        output, _ = await start_observed(request, agent, body)
        return output
    run_messages, options = call_options(body, settings)
    narrow_memory_options(agent, body, options)
    narrow_retries(agent, options)
    bind_run(request, body, options, has_memory=agent.memory is not None)
    check_memory_owner(body, options)
    if tools:
        options["tools"] = tools
    try:
        return await agent.stream(run_messages, **options)
    except Exception as exc:
        if isinstance(exc, ThreadAccessError):
            raise thread_unavailable("threadId", exc.thread_id) from exc
        raise run_error(exc, details=agent.provider_error_details) from exc


def _decision_options(caller: Caller, tools: dict[str, Tool]) -> dict[str, Any]:
    options: dict[str, Any] = {"request_context": caller.context()}
    memory = caller.memory()
    if memory is not None:
        options["memory"] = memory
    if tools:
        options["tools"] = tools
    return options


def _split(interrupt_id: str, index: int) -> tuple[str, str]:
    run_id, sep, call_id = interrupt_id.partition(":")
    if not sep or not run_id or not call_id:
        raise bad_request(f"resume.{index}.interruptId", "names no interrupt of this server")
    return run_id, call_id


def _resume_starts(
    request: Request, agent: Agent, given: Any, caller: Caller, tools: dict[str, Tool]
) -> list[Start]:
    """One start per resume entry, in order: approve, decline or resume the call it names."""
    starts: list[Start] = []
    for index, entry in enumerate(given.resume):
        run_id, call_id = _split(entry.interrupt_id, index)
        starts.append(_decision(request, agent, entry, (run_id, call_id, index), caller, tools))
    return starts


def _action(entry: Any, kind: str | None, index: int) -> tuple[str, str | None]:
    """`approve`, `decline` (and its reason) or `resume`: what a resume entry asks for a call
    of `kind` (`approval` or `suspend`; None when only the payload's shape tells)."""
    payload = entry.payload
    if kind is None:
        approval = isinstance(payload, dict) and isinstance(payload.get("approved"), bool)
    else:
        approval = kind == "approval"
    declined = approval and isinstance(payload, dict) and payload.get("approved") is False
    if entry.status == "cancelled" or declined:
        reason = payload.get("reason") if isinstance(payload, dict) else None
        return "decline", reason if isinstance(reason, str) else None
    if approval:
        if not isinstance(payload, dict) or payload.get("approved") is not True:
            raise bad_request(f"resume.{index}.payload", 'an approval is answered {"approved": true|false}')
        return "approve", None
    return "resume", None


def _decision(
    request: Request,
    agent: Agent,
    entry: Any,
    at: tuple[str, str, int],
    caller: Caller,
    tools: dict[str, Tool],
) -> Start:
    run_id, call_id, index = at

    async def start() -> Any:
        if durable_runs():
            return await _durable_decision(request, agent, entry, at, caller)
        # The kind of call picks the decision; whether the caller may make it is the agent's to
        # say (an unknown run and another's answer alike: 404).
        stored = await agent.suspended_run_store.get_suspended_run(run_id)
        pending = stored.pending if stored is not None and stored.agent_id == agent.id else ()
        call = next((c for c in pending if c.tool_call_id == call_id), None)
        action, reason = _action(entry, call.kind if call is not None else None, index)
        options = _decision_options(caller, tools)
        body: Any = ToolDecisionBody(runId=run_id, toolCallId=call_id)
        try:
            if action == "decline":
                return await agent.decline_tool_call(
                    run_id=run_id, tool_call_id=call_id, reason=reason, **options
                )
            if action == "approve":
                return await agent.approve_tool_call(run_id=run_id, tool_call_id=call_id, **options)
            body = ResumeStreamBody(runId=run_id, toolCallId=call_id, resumeData=entry.payload)
            return await agent.resume_stream(entry.payload, run_id=run_id, tool_call_id=call_id, **options)
        except Exception as exc:
            raise decision_error(exc, agent, body) from exc

    return start


async def _durable_decision(
    request: Request, agent: Agent, entry: Any, at: tuple[str, str, int], caller: Caller
) -> Any:
    """The decision as a validated update of the run's workflow; the rest read from the run log."""
    from sluicegate.server.durable_routes import Decide, decided_output

    run_id, call_id, index = at
    action, reason = _action(entry, None, index)
    decide: Decide
    if action == "decline":
        decide = lambda runs, who: runs.decline_tool_call(run_id, call_id, reason, request_context=who)  # noqa: E731
    elif action == "approve":
        decide = lambda runs, who: runs.approve_tool_call(run_id, call_id, request_context=who)  # noqa: E731
    else:
        payload = entry.payload
        decide = lambda runs, who: runs.resume_stream(run_id, payload, call_id, request_context=who)  # noqa: E731
    return await decided_output(request, agent, run_id, caller.owner(), decide)


async def _frontend_starts(
    agent: Agent, given: Any, caller: Caller, tools: dict[str, Tool]
) -> list[Start] | None:
    """When the input's last messages answer frontend tool calls a stopped run of this caller
    left: one start per answer, resuming that run with the client's result. None otherwise."""
    results = trailing_results(given.messages)
    if not results or not tools:
        return None
    runs = await agent.list_suspended_runs(request_context=caller.context(), memory=caller.memory())
    starts: list[Start] = []
    for stored in runs:
        for call in stored.pending:
            if call.tool_call_id in results and call.tool_name in tools:
                starts.append(
                    _frontend_answer(agent, stored.run_id, call.tool_call_id, results, caller, tools)
                )
    return starts or None


def _frontend_answer(
    agent: Agent, run_id: str, call_id: str, results: dict[str, Any], caller: Caller, tools: dict[str, Tool]
) -> Start:
    async def start() -> Any:
        options = _decision_options(caller, tools)
        try:
            return await agent.resume_stream(
                {"result": results[call_id]}, run_id=run_id, tool_call_id=call_id, **options
            )
        except Exception as exc:
            body = ResumeStreamBody(runId=run_id, toolCallId=call_id, resumeData=None)
            raise decision_error(exc, agent, body) from exc

    return start


async def event_stream(events: EventStream, first: Any, rest: list[Start]) -> AsyncIterator[bytes]:
    """RUN_STARTED, the outputs' events in order (each resumed output after the one before it
    stopped), then RUN_FINISHED; RUN_ERROR instead when the run fails or trips."""
    yield events.started()
    output = first
    try:
        while True:
            async for chunk in output.full_stream:
                data = events.chunk(chunk)
                if data:
                    yield data
                if events.ended:
                    return
            await output.aclose()
            if not rest:
                break
            events.next_run()
            output = None
            output = await rest.pop(0)()
        yield events.finished()
    except ApiError as exc:  # a later decision was refused
        yield events.failed(exc.message, f"HTTP_{exc.status}")
    except Exception as exc:
        yield events.failure(exc)
    finally:
        if output is not None:
            await output.aclose()


def _span_attributes(request: Request, key: str, caller: Caller) -> dict[str, Any]:
    """The request span's attributes, as `/stream` sets them (the studio lists runs by them)."""
    attributes: dict[str, Any] = {AGENT_ID: key, SERVER_APP: request.app.state.app_key}
    if identity_of(request) is not None:
        attributes[RESOURCE_ID] = caller.resource
    return attributes


@router.post(
    "/{agentId}/ag-ui",
    responses={
        **ERRORS,
        200: {
            "description": "AG-UI events as server-sent events: RUN_STARTED, ..., RUN_FINISHED or RUN_ERROR.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        503: ERRORS[400] | {"description": "The `ag-ui` extra is not installed."},
    },
    response_class=JSONResponse,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"type": "object", "description": "AG-UI's RunAgentInput."}}
            },
        }
    },
)
async def ag_ui_run(agentId: str, request: Request) -> Any:
    """Run the agent on an AG-UI `RunAgentInput` and stream AG-UI events."""
    key, agent = agent_or_404(request, agentId)
    core = protocol()
    given = await read_input(request, core)
    tools = frontend_tools(given.tools, agent.tools)
    if tools and durable_runs():
        raise bad_request(
            "tools", "frontend tools are not supported in durable runs (sluicegate serve --temporal)"
        )
    caller = Caller(request, agent, given)
    if given.resume:
        starts = _resume_starts(request, agent, given, caller, tools)
    else:
        starts = await _frontend_starts(agent, given, caller, tools) or [
            lambda: _start_run(request, agent, given, caller, tools)
        ]
    span = start_request_span(f"POST ag-ui {agent.name}", _span_attributes(request, key, caller))
    try:
        with trace.use_span(span, end_on_exit=False):  # the run's own spans start under it
            first = await starts.pop(0)()
    except BaseException:
        span.end()
        raise
    events = EventStream(
        core,
        thread_id=given.thread_id,
        run_id=given.run_id,
        error_details=agent.provider_error_details,
        frontend=frozenset(tools),
        tools=agent.tools,
    )
    return ChunkStreamResponse(
        event_stream(events, first, starts),
        run_id=given.run_id,
        timeout=settings_of(request).request_timeout,
        headers=trace_headers(span),
        span=lambda: run_span(span),
        encoder=EncodedFrames(events.failed),
        done=b"",  # AG-UI's stream has no terminator
    )
