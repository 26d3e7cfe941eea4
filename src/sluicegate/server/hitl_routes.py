"""Human-in-the-loop and reconnect routes, as `@mastra/client-js` calls them: list the runs
waiting on a person, approve or decline a pending tool call, resume a suspended tool, and
observe (replay, then follow) a run through the agent's run log (`Agent.observe`).

Who may act on a run: with an identity hook, only the resource the run was started for (and,
when the identity pins a thread, only a run on that thread); without one, the `resourceId` the
body names, or the run's owner when it names none (the server trusts its clients then, as
Mastra's does; see `sluicegate.server.identity`). A run of another resource or another agent
answers 404 with the body an unknown run id gets, never 403: nothing tells a caller that a run
it may not touch exists.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from sluicegate.agent import Agent
from sluicegate.agent.decisions import Action, WrongDecisionError, check_kind, the_pending_call
from sluicegate.agent.observe import ObservedOutput
from sluicegate.errors import APICallError, UnknownModelError
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.server.agents import run_error, run_to_end
from sluicegate.server.bodies import (
    NO_OVERRIDES,
    DeclineBody,
    ObserveBody,
    ResumeStreamBody,
    ToolDecisionBody,
    request_context_from,
    tuning_options,
)
from sluicegate.server.deps import ERRORS, agent_or_404, settings_of
from sluicegate.server.errors import ApiError, bad_request
from sluicegate.server.identity import bind_context, bound_resource, bound_thread, identity_of
from sluicegate.server.serialize import agent_output_json, suspended_run_json
from sluicegate.server.streaming import ChunkStreamResponse, StreamEncoder
from sluicegate.server.wire_events import events_for
from sluicegate.storage.errors import (
    AmbiguousToolCallError,
    SuspendedRunNotFoundError,
    ToolCallNotPendingError,
)
from sluicegate.storage.suspended_runs import SuspendedRun
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.payload import Payload
from sluicegate.stream.run_log import (
    OffsetExpiredError,
    OffsetOutOfRangeError,
    RunLogUnavailableError,
    RunNotFoundError,
)
from sluicegate.tools.tool import ToolInputError

router = APIRouter(prefix="/api/agents", tags=["human in the loop"])

MAX_PAGE = 1000

_SSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events: `data: <chunk JSON>` per chunk, then `data: [DONE]`.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}
_DECISION_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    404: ERRORS[404] | {"description": "No such agent, or no suspended run of this id for the caller."},
    409: ERRORS[400] | {"description": "The run is being resumed already, or the tool call is not pending."},
    502: ERRORS[400] | {"description": "The model provider failed."},
}
_STREAM_ERRORS = {**_DECISION_ERRORS, **_SSE}
_ERROR_CHUNKS = frozenset(("error", "tool-error"))
_CLAIMED = frozenset(("claimed", "already claimed", "changed by other claimers meanwhile"))


def unknown_run(run_id: str) -> ApiError:
    """The one answer for a run the caller cannot act on, whatever the reason."""
    return ApiError(404, f"runId: no suspended run {run_id!r}", field="runId")


# ----------------------------------------------------------------------------- who acts


async def _stored_run(
    request: Request, agent: Agent, body: ToolDecisionBody | ResumeStreamBody
) -> SuspendedRun:
    """The stored run the body names, if the caller may act on it (404 otherwise). The agent
    checks ownership again when it claims the run; this lookup finds the owner for a caller
    without an identity hook, and the thread for one whose identity pins it."""
    acting = bound_resource(request, body.resourceId, "resourceId")
    pinned = bound_thread(request, None, "threadId")
    stored = await agent.suspended_run_store.get_suspended_run(body.runId)
    if stored is None or stored.agent_id != agent.id:
        raise unknown_run(body.runId)
    trusted = identity_of(request) is None and acting is None
    if not trusted and stored.resource_id != acting:
        raise unknown_run(body.runId)
    if pinned is not None and stored.thread_id != pinned:
        raise unknown_run(body.runId)
    return stored


def _acting_context(request: Request, given: dict[str, Any] | None, stored: SuspendedRun) -> RequestContext:
    """The resumed run's request context: the body's values, the identity's over them, and the
    run's owner as the resource the decision is made for."""
    context = bind_context(request, request_context_from(given))
    if stored.resource_id is not None:
        context.set(RESOURCE_ID_KEY, stored.resource_id)
    return context


def decision_error(exc: BaseException, agent: Agent, body: ToolDecisionBody | ResumeStreamBody) -> ApiError:
    """The HTTP answer for a decision the agent refused."""
    if isinstance(exc, SuspendedRunNotFoundError):
        if exc.reason in _CLAIMED:  # only the owner gets this far
            return ApiError(409, f"runId: run {exc.run_id!r} is already being resumed", field="runId")
        return unknown_run(exc.run_id)
    if isinstance(exc, ToolCallNotPendingError):
        return ApiError(409, f"toolCallId: {exc}", field="toolCallId")
    if isinstance(exc, AmbiguousToolCallError):
        return bad_request("toolCallId", str(exc))
    if isinstance(exc, ToolInputError):
        return bad_request("resumeData", str(exc))
    if isinstance(exc, UnknownModelError) and body.model is not None:
        return bad_request("model", str(exc))
    return run_error(exc, details=agent.provider_error_details)


_WAITS_FOR = {
    "approval": "waits for an approval: use approve-tool-call or decline-tool-call",
    "suspend": "suspended itself and waits for resume data: use resume-stream or decline-tool-call",
}


def _check_kind(stored: SuspendedRun, tool_call_id: str | None, action: Action) -> None:
    """409 when the call waits on another kind of decision (approving a call that suspended
    itself, resuming one that waits for an approval; `decisions.check_kind`). An unknown or
    ambiguous id is the agent's to refuse."""
    call = the_pending_call(stored.pending, tool_call_id)
    if call is None:
        return
    try:
        check_kind(action, call)
    except WrongDecisionError as exc:
        raise ApiError(
            409, f"toolCallId: tool call {exc.tool_call_id!r} {_WAITS_FOR[exc.waits_for]}", field="toolCallId"
        ) from None


def _decision_options(request: Request, body: ToolDecisionBody, stored: SuspendedRun) -> dict[str, Any]:
    options: dict[str, Any] = {"request_context": _acting_context(request, body.requestContext, stored)}
    if body.model is not None:
        if not settings_of(request).allow_client_overrides:
            raise bad_request("model", NO_OVERRIDES)
        options["model"] = body.model
    return options


def _resume_options(request: Request, body: ResumeStreamBody, stored: SuspendedRun) -> dict[str, Any]:
    memory = body.memory
    if memory is not None and (memory.options is not None or memory.readOnly is not None):
        field = "memory.options" if memory.options is not None else "memory.readOnly"
        raise bad_request(field, "a resumed run keeps the memory settings it was started with")
    thread = memory.thread if memory is not None else body.threadId
    named = thread if isinstance(thread, str) or thread is None else thread.id
    thread_id = bound_thread(request, named, "memory.thread" if memory is not None else "threadId")
    resource = bound_resource(request, memory.resource if memory is not None else None, "memory.resource")
    if (thread_id is not None and thread_id != stored.thread_id) or (
        resource is not None and resource != stored.resource_id
    ):
        raise unknown_run(body.runId)  # names another conversation: not a run this caller has
    options = tuning_options(body, settings_of(request))
    options["request_context"] = _acting_context(request, body.requestContext, stored)
    return options


# ----------------------------------------------------------------------------- streams


def _stream(request: Request, agent: Agent, output: Any) -> ChunkStreamResponse:
    return ChunkStreamResponse(
        output.full_stream,
        run_id=output.run_id,
        timeout=settings_of(request).request_timeout,
        error_details=agent.provider_error_details,
        on_end=output.aclose,
        events=events_for(agent),
    )


@router.post("/{agentId}/approve-tool-call", responses=_STREAM_ERRORS, response_class=JSONResponse)
async def approve_tool_call(agentId: str, body: ToolDecisionBody, request: Request) -> Any:
    """Run the pending tool call and continue the run, streamed like `/stream`."""
    _, agent = agent_or_404(request, agentId)
    stored = await _stored_run(request, agent, body)
    _check_kind(stored, body.toolCallId, "approve")
    options = _decision_options(request, body, stored)
    try:
        output = await agent.approve_tool_call(run_id=body.runId, tool_call_id=body.toolCallId, **options)
    except Exception as exc:
        raise decision_error(exc, agent, body) from exc
    return _stream(request, agent, output)


@router.post("/{agentId}/decline-tool-call", responses=_STREAM_ERRORS, response_class=JSONResponse)
async def decline_tool_call(agentId: str, body: DeclineBody, request: Request) -> Any:
    """Refuse the pending tool call (it never runs; the model reads `reason`) and continue, streamed."""
    _, agent = agent_or_404(request, agentId)
    stored = await _stored_run(request, agent, body)
    options = _decision_options(request, body, stored)
    try:
        output = await agent.decline_tool_call(
            run_id=body.runId, tool_call_id=body.toolCallId, reason=body.reason, **options
        )
    except Exception as exc:
        raise decision_error(exc, agent, body) from exc
    return _stream(request, agent, output)


@router.post("/{agentId}/resume-stream", responses=_STREAM_ERRORS, response_class=JSONResponse)
async def resume_stream(agentId: str, body: ResumeStreamBody, request: Request) -> Any:
    """Run a suspended tool again with `resumeData` and continue the run, streamed."""
    _, agent = agent_or_404(request, agentId)
    stored = await _stored_run(request, agent, body)
    _check_kind(stored, body.toolCallId, "resume")
    options = _resume_options(request, body, stored)
    try:
        output = await agent.resume_stream(
            body.resumeData, run_id=body.runId, tool_call_id=body.toolCallId, **options
        )
    except Exception as exc:
        raise decision_error(exc, agent, body) from exc
    return _stream(request, agent, output)


Decision = Literal["approve", "decline", "resume"]


def _decision_body(
    decision: Decision, run_id: str, tool_call_id: str | None, resource_id: str | None, fields: dict[str, Any]
) -> DeclineBody | ResumeStreamBody:
    """The body the route of `decision` would have read, checked the same way (400 naming the field)."""
    given = {"runId": run_id, "toolCallId": tool_call_id, "resourceId": resource_id, **fields}
    try:
        if decision == "resume":
            return ResumeStreamBody(**given)
        return DeclineBody(**given)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise bad_request(".".join(str(p) for p in error["loc"]) or "runId", error["msg"]) from None


async def decided_stream(
    request: Request,
    agent: Agent,
    decision: Decision,
    *,
    run_id: str,
    tool_call_id: str | None,
    resource_id: str | None,
    request_context: dict[str, Any] | None = None,
    reason: str | None = None,
    resume_data: Any = None,
    encoder: StreamEncoder | None = None,
    headers: dict[str, str] | None = None,
) -> ChunkStreamResponse:
    """A decision another protocol's route carries (approve, decline, or resume with
    `resume_data`), checked and applied as `approve-tool-call`, `decline-tool-call` and
    `resume-stream` do (the same owner check and 404/409 answers); the rest of the run, streamed
    in that protocol's framing (`encoder`)."""
    fields: dict[str, Any] = {"requestContext": request_context}
    if decision == "resume":
        fields["resumeData"] = resume_data
    elif decision == "decline" and reason is not None:
        fields["reason"] = reason
    body = _decision_body(decision, run_id, tool_call_id, resource_id, fields)
    stored = await _stored_run(request, agent, body)
    if decision != "decline":
        _check_kind(stored, tool_call_id, decision)
    try:
        if isinstance(body, ResumeStreamBody):
            options = _resume_options(request, body, stored)
            output = await agent.resume_stream(
                resume_data, run_id=run_id, tool_call_id=tool_call_id, **options
            )
        elif decision == "approve":
            options = _decision_options(request, body, stored)
            output = await agent.approve_tool_call(run_id=run_id, tool_call_id=tool_call_id, **options)
        else:
            options = _decision_options(request, body, stored)
            output = await agent.decline_tool_call(
                run_id=run_id, tool_call_id=tool_call_id, reason=body.reason, **options
            )
    except ApiError:
        raise
    except Exception as exc:
        raise decision_error(exc, agent, body) from exc
    return ChunkStreamResponse(
        output.full_stream,
        run_id=output.run_id,
        timeout=settings_of(request).request_timeout,
        headers=headers,
        error_details=agent.provider_error_details,
        on_end=output.aclose,
        events=events_for(agent),
        encoder=encoder,
    )


# ----------------------------------------------------------------------------- to the end


@router.post("/{agentId}/approve-tool-call-generate", responses={**_DECISION_ERRORS, 504: ERRORS[400]})
async def approve_tool_call_generate(agentId: str, body: ToolDecisionBody, request: Request) -> JSONResponse:
    """Run the pending tool call and the rest of the run; the full output, like `/generate`."""
    _, agent = agent_or_404(request, agentId)
    stored = await _stored_run(request, agent, body)
    _check_kind(stored, body.toolCallId, "approve")
    options = _decision_options(request, body, stored)
    try:
        approved = agent.approve_tool_call_generate(
            run_id=body.runId, tool_call_id=body.toolCallId, **options
        )
        result = await run_to_end(request, approved)
    except ApiError:
        raise
    except Exception as exc:
        raise decision_error(exc, agent, body) from exc
    return JSONResponse(agent_output_json(result, agent))


@router.post("/{agentId}/decline-tool-call-generate", responses={**_DECISION_ERRORS, 504: ERRORS[400]})
async def decline_tool_call_generate(agentId: str, body: DeclineBody, request: Request) -> JSONResponse:
    """Refuse the pending tool call and run the rest; the full output, like `/generate`."""
    _, agent = agent_or_404(request, agentId)
    stored = await _stored_run(request, agent, body)
    options = _decision_options(request, body, stored)
    try:
        result = await run_to_end(
            request,
            agent.decline_tool_call_generate(
                run_id=body.runId, tool_call_id=body.toolCallId, reason=body.reason, **options
            ),
        )
    except ApiError:
        raise
    except Exception as exc:
        raise decision_error(exc, agent, body) from exc
    return JSONResponse(agent_output_json(result, agent))


# ----------------------------------------------------------------------------- listing


def _as_utc(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


@router.get("/{agentId}/suspended-runs", responses=ERRORS)
async def list_suspended_runs(
    agentId: str,
    request: Request,
    threadId: str | None = Query(default=None, min_length=1, max_length=256),
    resourceId: str | None = Query(
        default=None,
        min_length=1,
        max_length=256,
        description="Whose runs (without an identity hook; with one, always the authenticated resource).",
    ),
    fromDate: Annotated[datetime | None, Query(description="Runs suspended at or after this time.")] = None,
    toDate: Annotated[datetime | None, Query(description="Runs suspended at or before this time.")] = None,
    page: int = Query(default=0, ge=0, le=1_000_000),
    perPage: int = Query(default=100, ge=1, le=MAX_PAGE),
) -> dict[str, Any]:
    """The agent's runs waiting on a person, newest first: `{runs, total}` (total before paging)."""
    _, agent = agent_or_404(request, agentId)
    resource_id = bound_resource(request, resourceId, "resourceId")
    thread_id = bound_thread(request, threadId, "threadId")
    start, end = _as_utc(fromDate), _as_utc(toDate)
    if start is not None and end is not None and start > end:
        raise bad_request("fromDate", "must not be after toDate")
    if identity_of(request) is None and resource_id is None:
        # Without an identity hook the server trusts its clients (module docstring): every
        # resource's runs, as Mastra lists them; `Agent.list_suspended_runs` lists a caller's own.
        store = agent.suspended_run_store
        runs = await store.list_suspended_runs(agent.id, thread_id=thread_id, resource_id=None)
    else:
        runs = await agent.list_suspended_runs(thread_id=thread_id, resource_id=resource_id)
        runs = [r for r in runs if r.resource_id == resource_id]  # the agent narrows; make sure
    if start is not None:
        runs = [r for r in runs if r.suspended_at >= start]
    if end is not None:
        runs = [r for r in runs if r.suspended_at <= end]
    first = page * perPage
    return {"runs": [suspended_run_json(r) for r in runs[first : first + perPage]], "total": len(runs)}


# ----------------------------------------------------------------------------- observe


async def _observed(request: Request, agent: Agent, body: ObserveBody) -> ObservedOutput:
    """The run's chunks from `offset`, if the caller may read them (404 with one body otherwise):
    the agent's `observe`, for the run's own resource."""
    missing = ApiError(404, f"runId: no run {body.runId!r} to observe", field="runId")
    acting = bound_resource(request, body.resourceId, "resourceId")
    pinned = bound_thread(request, None, "threadId")
    run_log = agent.run_log
    if run_log is None:  # `Agent(run_log=None)`: nothing is kept, nothing can be observed
        raise missing
    try:
        info = await run_log.info(body.runId)
        trusted = identity_of(request) is None and acting is None
        if info.agent_id != agent.id or (not trusted and info.resource_id != acting):
            raise missing
        if pinned is not None and info.thread_id != pinned:
            raise missing
        context = RequestContext()
        if info.resource_id is not None:
            context.set(RESOURCE_ID_KEY, info.resource_id)
        return await agent.observe(run_id=body.runId, offset=body.offset, request_context=context)
    except RunNotFoundError:
        raise missing from None
    except OffsetExpiredError as exc:
        raise ApiError(
            410,
            f"offset: chunks before {exc.first_offset} of run {body.runId!r} are no longer kept",
            field="offset",
            extra={"firstOffset": exc.first_offset},
        ) from None
    except OffsetOutOfRangeError as exc:
        raise bad_request("offset", f"the run ended after {exc.end} chunks") from None
    except RunLogUnavailableError as exc:
        raise ApiError(503, f"runId: {exc}", field="runId") from None


@router.post(
    "/{agentId}/observe",
    responses={
        **ERRORS,
        **_SSE,
        404: ERRORS[404] | {"description": "No such agent, or no run with this id the caller may observe."},
        410: ERRORS[400] | {"description": "The chunks at `offset` were dropped; `firstOffset` is kept."},
        503: ERRORS[400] | {"description": "The run log cannot be read (its Redis failed)."},
    },
    response_class=JSONResponse,
)
async def observe(agentId: str, body: ObserveBody, request: Request) -> Any:
    """Replay a run's chunks from `offset`, then follow it live until it ends (or suspends).
    Leaving does not stop the run."""
    _, agent = agent_or_404(request, agentId)
    observed = await _observed(request, agent, body)
    return ChunkStreamResponse(
        _public(observed.full_stream, agent.provider_error_details),
        run_id=body.runId,
        timeout=settings_of(request).request_timeout,
        error_details=agent.provider_error_details,
        on_end=observed.aclose,
        timeout_message="stopped following the run after {timeout:g} s; observe again to go on",
        events=events_for(agent),
    )


_PROVIDER_FIELDS = frozenset(("statusCode", "isRetryable", "responseBody", "url"))


async def _public(chunks: AsyncIterator[Chunk[Any]], details: bool) -> AsyncIterator[Chunk[Any]]:
    """The observed chunks, a provider error in them as the live stream showed it. A chunk read
    back from a log that serialized it (Redis) holds its error as JSON, no longer the exception
    the live stream made public: it is made public again here (status and retryability, not the
    provider's text or body) unless the agent has `provider_error_details`."""
    async for chunk in chunks:
        if not details and chunk.type in _ERROR_CHUNKS:
            error = chunk.payload.get("error") if isinstance(chunk.payload, Payload) else None
            if isinstance(error, dict) and _PROVIDER_FIELDS & error.keys():
                fields = {**chunk.payload.__dict__, "error": _public_provider_error(error)}
                chunk = Chunk(chunk.type, chunk.run_id, payload=Payload(**fields), from_=chunk.from_)
        yield chunk


def _public_provider_error(error: dict[str, Any]) -> dict[str, Any]:
    status = error.get("statusCode")
    provider = error.get("provider")
    rebuilt = APICallError(
        "",
        status_code=status if isinstance(status, int) and not isinstance(status, bool) else None,
        is_retryable=error.get("isRetryable") is True,
        provider=provider if isinstance(provider, str) else None,
    )
    public = rebuilt.public_json(details=False)
    if isinstance(error.get("name"), str):
        public["name"] = error["name"]
    return public
