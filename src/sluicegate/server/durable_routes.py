"""`sluicegate serve --temporal HOST:PORT`: the same agent routes, with runs started as
Temporal workflows (see docs/durable.md).

These routes are matched before the in-process ones: `stream` and `generate` start a workflow,
the approval routes send validated updates, and every stream is the run's log read with
`observe`, so any server instance serves any run, and a client that disconnects leaves the
run going (it is durable; `observe` reconnects). Options a durable run cannot take (a
per-request model, tools, processors, model settings) are refused by name (400).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from temporalio.client import Client

from sluicegate.agent import Agent
from sluicegate.durable.temporal import PayloadTooLargeError, TemporalRuns, names
from sluicegate.durable.temporal.runs import WorkerUnavailableError
from sluicegate.durable.temporal.trace_context import from_headers
from sluicegate.errors import ConfigurationError, InvalidInputError
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.server.bodies import (
    AgentCallBody,
    DeclineBody,
    ResumeStreamBody,
    ToolDecisionBody,
    call_options,
    narrow_memory_options,
)
from sluicegate.server.deps import ERRORS, agent_or_404, settings_of
from sluicegate.server.errors import ApiError, bad_request
from sluicegate.server.identity import bind_run, identity_of
from sluicegate.server.settings import TEMPORAL_ENV
from sluicegate.server.streaming import ChunkStreamResponse, StreamEncoder
from sluicegate.server.wire_events import events_for
from sluicegate.storage.errors import SuspendedRunNotFoundError
from sluicegate.stream.run_log import RunLogUnavailableError, RunNotFoundError
from sluicegate.tracing.attributes import DURABLE_NAMESPACE, DURABLE_TASK_QUEUE, DURABLE_WORKFLOW_ID
from sluicegate.tracing.state import opentelemetry_in_use

TASK_QUEUE_ENV = "SLUICEGATE_TEMPORAL_TASK_QUEUE"
NAMESPACE_ENV = "SLUICEGATE_TEMPORAL_NAMESPACE"
OPEN_TIMEOUT_ENV = "SLUICEGATE_TEMPORAL_OPEN_TIMEOUT"
DEFAULT_OPEN_TIMEOUT = 30.0
"""Seconds a stream route waits for a worker to open (or, after a decision, to continue) the
run in the run log before answering 503: no worker may be polling yet (workers starting)."""

router = APIRouter(prefix="/api/agents", tags=["durable runs"])

_STREAM_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    503: ERRORS[400]
    | {"description": "No worker opened (or, after a decision, continued) the run in time; see `runId`."},
}

_DURABLE_OPTIONS = frozenset(
    (
        "request_context",
        "max_steps",
        "require_tool_approval",
        "memory",
        "tool_choice",
        "max_processor_retries",
    )
)


def install(app: FastAPI) -> None:
    """Serve durable runs when `SLUICEGATE_TEMPORAL` names a Temporal frontend."""
    if os.environ.get(TEMPORAL_ENV):
        app.include_router(router)


async def _runs(request: Request) -> TemporalRuns:
    runs: TemporalRuns | None = getattr(request.app.state, "temporal_runs", None)
    if runs is None:
        target = os.environ[TEMPORAL_ENV]
        queue = os.environ.get(TASK_QUEUE_ENV) or names.DEFAULT_TASK_QUEUE
        namespace = os.environ.get(NAMESPACE_ENV) or "default"
        runs = TemporalRuns(await Client.connect(target, namespace=namespace), task_queue=queue)
        request.app.state.temporal_runs = runs
    return runs


def open_timeout() -> float:
    """`SLUICEGATE_TEMPORAL_OPEN_TIMEOUT` (`serve --open-timeout`), else 30 s."""
    raw = os.environ.get(OPEN_TIMEOUT_ENV)
    if not raw:
        return DEFAULT_OPEN_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ConfigurationError(f"{OPEN_TIMEOUT_ENV} must be a positive number of seconds, got {raw!r}")
    return value


def _not_open(exc: WorkerUnavailableError, run_id: str) -> ApiError:
    """503 for a run no worker opened or continued in time: the run exists (a workflow), so
    its id goes with the answer, to observe it later."""
    return ApiError(503, str(exc), field="runId", extra={"runId": run_id})


def _caller(request: Request, resource_id: str | None) -> RequestContext:
    """Who decides: the bound identity's resource, else the body's `resourceId`."""
    identity = identity_of(request)
    resource = identity.resource_id if identity is not None else resource_id
    return RequestContext({RESOURCE_ID_KEY: resource} if resource else {})


async def _begin(
    agent: Agent[Any], body: AgentCallBody, request: Request
) -> tuple[TemporalRuns, str, RequestContext]:
    messages, options = call_options(body, settings_of(request))
    narrow_memory_options(agent, body, options)
    bind_run(request, body, options, has_memory=agent.memory is not None)
    unsupported = sorted(set(options) - _DURABLE_OPTIONS)
    if unsupported:
        raise bad_request(unsupported[0], "is not supported in durable runs (sluicegate serve --temporal)")
    memory = options.get("memory")
    if memory is not None:
        memory = {k: v for k, v in memory.items() if k in ("thread", "resource") and v is not None}
        if set(options["memory"]) - {"thread", "resource"}:
            raise bad_request("memory.options", "is not supported in durable runs")
    context: RequestContext = options["request_context"]
    runs = await _runs(request)
    try:
        run_id = await runs.start(
            agent,
            messages,
            request_context=context,
            max_steps=options.get("max_steps"),
            require_tool_approval=options.get("require_tool_approval"),
            memory=memory,
            trace_context=from_headers(request.headers),
            tool_choice=options.get("tool_choice"),
            max_processor_retries=options.get("max_processor_retries"),
        )
    except (InvalidInputError, PayloadTooLargeError) as exc:
        raise ApiError(400, str(exc)) from exc
    _name_workflow(runs, run_id)
    owner = RequestContext({RESOURCE_ID_KEY: memory["resource"]} if memory and memory.get("resource") else {})
    return runs, run_id, owner


def _name_workflow(runs: TemporalRuns, run_id: str) -> None:
    """The request's span (an instrumented server's), when one records, names the run's
    workflow as the run's `invoke_agent` span does, so the studio links either to Temporal."""
    if not opentelemetry_in_use():
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes(
            {
                DURABLE_WORKFLOW_ID: run_id,
                DURABLE_NAMESPACE: runs.client.namespace,
                DURABLE_TASK_QUEUE: runs.task_queue,
            }
        )


WORKFLOW_ID_HEADER = "x-sluicegate-workflow-id"
"""On every durable route's response: the run's workflow id (its run id), to find the run in
Temporal's UI and CLI (`temporal workflow show -w <id>`) and its spans (`sluicegate.run_id`)."""


def _stream(
    request: Request,
    agent: Agent[Any],
    output: Any,
    run_id: str,
    encoder: StreamEncoder | None = None,
    headers: dict[str, str] | None = None,
) -> ChunkStreamResponse:
    return ChunkStreamResponse(
        output.full_stream,
        run_id=run_id,
        headers={WORKFLOW_ID_HEADER: run_id, **(headers or {})},
        timeout=settings_of(request).request_timeout,
        error_details=agent.provider_error_details,
        events=events_for(agent),
        encoder=encoder,
    )


@router.post("/{agentId}/stream", responses=_STREAM_ERRORS, response_class=JSONResponse)
async def stream(agentId: str, body: AgentCallBody, request: Request) -> Any:
    """Start the run as a workflow and stream its chunks from the run log."""
    _, agent = agent_or_404(request, agentId)
    return await durable_stream(agent, body, request)


async def durable_stream(
    agent: Agent[Any],
    body: AgentCallBody,
    request: Request,
    *,
    encoder: StreamEncoder | None = None,
    headers: dict[str, str] | None = None,
) -> ChunkStreamResponse:
    """Start `agent` on `body` as a workflow (as `/stream` does here) and answer with its chunks
    read from the run log, in Mastra's framing or another protocol's (`encoder`)."""
    output, run_id = await start_observed(request, agent, body)
    return _stream(request, agent, output, run_id, encoder, headers)


async def start_observed(request: Request, agent: Agent[Any], body: AgentCallBody) -> tuple[Any, str]:
    """Start the run `body` asks for as a workflow: its stream read from the run log, and its
    run id. What `stream` serves, for every protocol's route."""
    runs, run_id, owner = await _begin(agent, body, request)
    try:
        output = await runs.observe(agent, run_id, request_context=owner, wait=open_timeout())
    except WorkerUnavailableError as exc:
        raise _not_open(exc, run_id) from exc
    except RunLogUnavailableError as exc:
        raise ApiError(503, f"runId: {exc}", field="runId", extra={"runId": run_id}) from exc
    return output, run_id


@router.post("/{agentId}/generate", responses=ERRORS)
async def generate(agentId: str, body: AgentCallBody, request: Request) -> JSONResponse:
    """Start the run as a workflow and answer with its result once it ends."""
    _, agent = agent_or_404(request, agentId)
    runs, run_id, _ = await _begin(agent, body, request)
    result = await runs.result(run_id)
    return JSONResponse(result, headers={WORKFLOW_ID_HEADER: run_id})


Decide = Callable[[TemporalRuns, RequestContext], Awaitable[dict[str, Any]]]


async def _decided(
    request: Request,
    agentId: str,
    run_id: str,
    resource_id: str | None,
    decide: Decide,
    encoder: StreamEncoder | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """The decision's update, then the rest of the run's stream from where it resumes."""
    _, agent = agent_or_404(request, agentId)
    output = await decided_output(request, agent, run_id, resource_id, decide)
    return _stream(request, agent, output, run_id, encoder, headers)


async def decided_output(
    request: Request, agent: Agent[Any], run_id: str, resource_id: str | None, decide: Decide
) -> Any:
    """The decision's update, then the rest of the run's stream from where it resumes, once
    a worker has taken the run up again (the update is answered before that). For every
    protocol's route.

    The run is first looked up as `observe` does (this agent's, the caller's resource), so a
    route of one agent never decides a run of another."""
    runs = await _runs(request)
    caller = _caller(request, resource_id)
    try:
        await agent.observe(run_id=run_id, request_context=caller)
        answer = await decide(runs, caller)
    except (SuspendedRunNotFoundError, RunNotFoundError) as exc:
        raise ApiError(404, f"runId: no run {run_id!r} waits for a decision", field="runId") from exc
    except InvalidInputError as exc:
        raise ApiError(400, str(exc), field="toolCallId") from exc
    except PayloadTooLargeError as exc:
        raise ApiError(400, str(exc)) from exc
    except WorkerUnavailableError as exc:
        raise ApiError(503, str(exc)) from exc
    try:
        output = await runs.continuation(
            agent, run_id, answer["offset"], request_context=caller, wait=open_timeout()
        )
    except WorkerUnavailableError as exc:
        raise _not_open(exc, run_id) from exc
    except RunNotFoundError as exc:  # its log's retention ended meanwhile: the decision stands
        raise ApiError(404, f"runId: run {run_id!r} is no longer in the run log", field="runId") from exc
    except RunLogUnavailableError as exc:
        raise ApiError(503, f"runId: {exc}", field="runId", extra={"runId": run_id}) from exc
    return output


async def durable_decision(
    request: Request,
    agentId: str,
    kind: Literal["approve", "decline", "resume"],
    *,
    run_id: str,
    tool_call_id: str | None,
    resource_id: str | None,
    reason: str | None = None,
    resume_data: Any = None,
    encoder: StreamEncoder | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """A decision another protocol's route carries, sent as the approval routes here send it
    (a validated workflow update); the rest of the run from the run log, in its framing."""
    decide = decision(kind, run_id, tool_call_id, reason=reason, resume_data=resume_data)
    return await _decided(request, agentId, run_id, resource_id, decide, encoder, headers)


def decision(
    kind: Literal["approve", "decline", "resume"],
    run_id: str,
    tool_call_id: str | None,
    *,
    reason: str | None = None,
    resume_data: Any = None,
) -> Decide:
    """The workflow update that carries a decision (for `decided_output`)."""

    def decide(runs: TemporalRuns, caller: RequestContext) -> Awaitable[dict[str, Any]]:
        if kind == "approve":
            return runs.approve_tool_call(run_id, tool_call_id, request_context=caller)
        if kind == "decline":
            return runs.decline_tool_call(run_id, tool_call_id, reason, request_context=caller)
        return runs.resume_stream(run_id, resume_data, tool_call_id, request_context=caller)

    return decide


@router.post("/{agentId}/approve-tool-call", responses=_STREAM_ERRORS, response_class=JSONResponse)
async def approve_tool_call(agentId: str, body: ToolDecisionBody, request: Request) -> Any:
    """Approve the pending call (a validated workflow update); the rest of the run, streamed."""
    return await _decided(
        request,
        agentId,
        body.runId,
        body.resourceId,
        lambda runs, caller: runs.approve_tool_call(body.runId, body.toolCallId, request_context=caller),
    )


@router.post("/{agentId}/decline-tool-call", responses=_STREAM_ERRORS, response_class=JSONResponse)
async def decline_tool_call(agentId: str, body: DeclineBody, request: Request) -> Any:
    """Decline the pending call (it never runs); the rest of the run, streamed."""
    return await _decided(
        request,
        agentId,
        body.runId,
        body.resourceId,
        lambda runs, caller: runs.decline_tool_call(
            body.runId, body.toolCallId, body.reason, request_context=caller
        ),
    )


@router.post("/{agentId}/resume-stream", responses=_STREAM_ERRORS, response_class=JSONResponse)
async def resume_stream(agentId: str, body: ResumeStreamBody, request: Request) -> Any:
    """Run the suspended tool again with `resumeData`; the rest of the run, streamed."""
    return await _decided(
        request,
        agentId,
        body.runId,
        body.resourceId,
        lambda runs, caller: runs.resume_stream(
            body.runId, body.resumeData, body.toolCallId, request_context=caller
        ),
    )
