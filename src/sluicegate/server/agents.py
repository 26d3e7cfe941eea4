"""Agent routes: list, details, `generate` and `stream`, as `@mastra/client-js` calls them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from opentelemetry import trace

from sluicegate.agent import Agent
from sluicegate.errors import (
    AccessDeniedError,
    APICallError,
    ConfigurationError,
    MissingAPIKeyError,
    MissingExtraError,
    ProcessorError,
    SluicegateError,
    UnknownModelError,
    public_text,
)
from sluicegate.memory.errors import ThreadAccessError
from sluicegate.server.bodies import (
    AgentCallBody,
    call_options,
    drop_memory_without_memory,
    narrow_memory_options,
    narrow_retries,
)
from sluicegate.server.deps import ERRORS, agent_or_404, registry_of, settings_of
from sluicegate.server.errors import ApiError, bad_request, log, provider_error, thread_unavailable
from sluicegate.server.identity import bind_run, identity_of
from sluicegate.server.mastra.observability import mark_conversation
from sluicegate.server.serialize import agent_json, agent_output_json
from sluicegate.server.streaming import ChunkStreamResponse, StreamEncoder, wait_for_disconnect, warned
from sluicegate.server.traces import (
    AGENT_ID,
    RESOURCE_ID,
    SERVER_APP,
    run_span,
    start_request_span,
    trace_headers,
)
from sluicegate.server.wire_events import events_for
from sluicegate.server.wire_objects import with_objects

router = APIRouter(prefix="/api", tags=["agents"])

TRACE_HEADER = "x-sluicegate-trace-id"

T = TypeVar("T")


@router.get("/agents", responses=ERRORS)
async def list_agents(request: Request) -> dict[str, Any]:
    """Every agent, keyed by its registry id (Mastra's `GET /api/agents`). `hasDraft` is Mastra's
    editor flag for a stored version newer than the active one; a code agent has none."""
    return {
        key: {**await agent_json(key, agent), "hasDraft": False}
        for key, agent in registry_of(request).agents.items()
    }


@router.get("/agents/{agentId}", responses=ERRORS)
async def get_agent(agentId: str, request: Request) -> dict[str, Any]:
    key, agent = agent_or_404(request, agentId)
    return await agent_json(key, agent)


def _span_attributes(request: Request, agent_key: str) -> dict[str, Any]:
    attributes: dict[str, Any] = {AGENT_ID: agent_key, SERVER_APP: request.app.state.app_key}
    identity = identity_of(request)
    if identity is not None:  # lets the studio show a caller only its own runs
        attributes[RESOURCE_ID] = identity.resource_id
    return attributes


def run_error(exc: BaseException, *, details: bool = False, client_model: bool = False) -> ApiError:
    """The HTTP answer for an error raised while starting or running an agent (`details`: the
    agent's `provider_error_details`). A model the server cannot use (no API key, a missing
    extra, an unknown provider the app configured) is the server's fault: 503, not 400; an
    unknown provider in the request's own `model` (`client_model`) stays the client's 400."""
    if isinstance(exc, (MissingAPIKeyError, MissingExtraError)) or (
        isinstance(exc, UnknownModelError) and not client_model
    ):
        log.error("the agent's model cannot be used: %s", exc)
        return ApiError(503, f"the server cannot use this agent's model: {public_text(exc)}")
    if isinstance(exc, AccessDeniedError):  # another resource's thread or message, or identity
        return ApiError(403, str(exc), field="memory")
    if isinstance(exc, APICallError):
        return provider_error(exc, details=details)
    message = str(exc) if details else public_text(exc)
    if isinstance(exc, ProcessorError):  # a processor failed: the server's fault, not the request's
        # The traceback, unless it would repeat a provider's text the agent keeps private.
        log.error("processor failure: %s", message, exc_info=exc if message == str(exc) else None)
        return ApiError(500, message)
    if isinstance(exc, (ConfigurationError, SluicegateError, TypeError, ValueError)):
        return ApiError(400, message)
    raise exc


async def run_to_end(request: Request, run: Coroutine[Any, Any, T]) -> T:
    """The result of `run`, driven by a task of its own: a client that disconnects (499) or the
    request timeout (504) cancels it."""
    settings = settings_of(request)
    task = asyncio.ensure_future(run)
    watcher = asyncio.ensure_future(wait_for_disconnect(request.receive))
    try:
        done, _ = await asyncio.wait(
            {task, watcher}, timeout=settings.request_timeout, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        for pending in (task, watcher):
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pending
    if task not in done:
        if watcher in done:
            raise ApiError(499, "client closed the request")
        raise ApiError(504, f"the run did not finish within {settings.request_timeout:g} s and was cancelled")
    return task.result()


def check_memory_owner(body: AgentCallBody, options: dict[str, Any]) -> None:
    """A thread without the resource that owns it: 400 naming the field, in the request's own
    (JSON) words, before the run starts."""
    memory = options.get("memory")
    if not isinstance(memory, dict) or not memory.get("thread") or memory.get("resource"):
        return
    if body.memory is not None:
        raise bad_request(
            "memory.resource",
            'a thread needs the resource that owns it: send "memory": '
            '{"thread": "<thread id>", "resource": "<user or account id>"}',
        )
    raise bad_request("resourceId", 'a "threadId" needs the "resourceId" that owns it (a user or account id)')


def _refusal(exc: BaseException, body: AgentCallBody, *, details: bool) -> ApiError:
    """`run_error`, except that another resource's thread gets the answer creating a thread with
    a taken id gets on every route (not a 403 that would confirm whose it is)."""
    if isinstance(exc, ThreadAccessError):
        return thread_unavailable("memory.thread" if body.memory is not None else "threadId", exc.thread_id)
    return run_error(exc, details=details, client_model=body.model is not None)


async def _start(
    agent: Agent,
    body: AgentCallBody,
    request: Request,
    *,
    stream: bool,
    abort_signal: asyncio.Event | None = None,
) -> tuple[Any, dict[str, Any], str | None]:
    """The started stream (or the messages, for generate), the run options, and a warning for
    the client (a `memory` option ignored on an agent without memory)."""
    messages, options = call_options(body, settings_of(request))
    warning = drop_memory_without_memory(agent, options)
    narrow_memory_options(agent, body, options)
    narrow_retries(agent, options)
    bind_run(request, body, options, has_memory=agent.memory is not None)
    check_memory_owner(body, options)
    if abort_signal is not None:
        options["abort_signal"] = abort_signal
    try:
        if stream:
            return await agent.stream(messages, **options), options, warning
        return messages, options, warning
    except Exception as exc:
        raise _refusal(exc, body, details=agent.provider_error_details) from exc


async def start_stream(
    agent: Agent, body: AgentCallBody, request: Request, *, abort_signal: asyncio.Event | None = None
) -> tuple[Any, dict[str, Any], str | None]:
    """Start `agent` on `body` as the `stream` route does (the body's options checked, bound to
    the caller's identity): the run's output, its options and a warning for the client. The
    front ends' protocol adapters start their runs here; `abort_signal` stops the run from
    outside (a protocol's cancel request)."""
    return await _start(agent, body, request, stream=True, abort_signal=abort_signal)


def span_attributes(request: Request, agent_key: str) -> dict[str, Any]:
    """The request span's attributes for a run of `agent_key` (who calls, which app)."""
    return _span_attributes(request, agent_key)


@router.post(
    "/agents/{agentId}/generate",
    responses={**ERRORS, 502: ERRORS[400] | {"description": "The model provider failed."}, 504: ERRORS[400]},
)
async def generate(agentId: str, body: AgentCallBody, request: Request) -> JSONResponse:
    """Run the agent to its end and return the full output (text, steps, usage, tripwire)."""
    key, agent = agent_or_404(request, agentId)
    messages, options, warning = await _start(agent, body, request, stream=False)
    span = start_request_span(f"POST generate {agent.name}", _span_attributes(request, key))
    mark_conversation(span, options.get("memory"))

    async def run() -> Any:
        with run_span(span):
            return await agent.generate(messages, **options)

    try:
        result = await run_to_end(request, run())
    except ApiError:
        raise
    except Exception as exc:
        raise _refusal(exc, body, details=agent.provider_error_details) from exc
    answer = agent_output_json(result, agent)
    if warning is not None:
        answer["warnings"] = [*(answer.get("warnings") or []), {"type": "other", "message": warning}]
    return JSONResponse(answer, headers=trace_headers(span))


@router.post(
    "/agents/{agentId}/stream",
    responses={
        **ERRORS,
        200: {
            "description": "Server-sent events: `data: <chunk JSON>` per chunk, then `data: [DONE]`.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
    },
    response_class=JSONResponse,
)
async def stream(agentId: str, body: AgentCallBody, request: Request) -> Any:
    """Stream the run's chunks in Mastra's SSE framing; a disconnect cancels the run."""
    key, agent = agent_or_404(request, agentId)
    return await stream_response(key, agent, body, request)


async def stream_response(
    key: str,
    agent: Agent,
    body: AgentCallBody,
    request: Request,
    *,
    encoder: StreamEncoder | None = None,
    headers: dict[str, str] | None = None,
) -> ChunkStreamResponse:
    """Start `agent` on `body` as `/stream` does (the same checks, identity binding, span) and
    answer with its chunk stream after the output processors: in Mastra's framing, or in another
    protocol's (`encoder`, with its own `headers`)."""
    settings = settings_of(request)
    span = start_request_span(f"POST stream {agent.name}", _span_attributes(request, key))
    try:
        with trace.use_span(span, end_on_exit=False):  # the run's own spans start under it
            output, options, warning = await _start(agent, body, request, stream=True)
        mark_conversation(span, options.get("memory"))
    except BaseException:
        span.end()
        raise
    chunks = output.full_stream if warning is None else warned(output.full_stream, output.run_id, warning)
    if options.get("structured_output") is not None:
        chunks = with_objects(chunks, output.run_id)
    return ChunkStreamResponse(
        chunks,
        run_id=output.run_id,
        timeout=settings.request_timeout,
        headers={**trace_headers(span), **(headers or {})},
        span=lambda: run_span(span),
        error_details=agent.provider_error_details,
        events=events_for(agent),
        encoder=encoder,
    )
