"""Mastra's agent signals, as far as Studio's chat uses them: subscribe to a memory thread's
runs (`POST /api/agents/:agentId/threads/subscribe`), send a user message that starts a run on
an idle thread (`/send-message`, `/queue-message`), and abort that run (`/threads/abort`).

A subscription is one SSE stream that carries every run of the thread, the active one and each
later one, read from the agent's run log (the log `observe` replays). The log is wrapped in a
`ThreadRunLog` on first use so that opening a run with a thread announces it to the thread's
subscribers; the writer is the log's own, so the per-chunk path gains nothing.

A run started by `send-message` is preceded on the subscription by Mastra's
`data-user-message` part (the message as the agent received it), which is how Studio shows the
user's message once. Such a run belongs to no request: it runs in the background, within the
server's request timeout, and `threads/abort` cancels it. Such runs, and subscriptions, are
bounded per process and per resource (`stream_bounds`: 429 past a bound); a subscription sends
a `: heartbeat` comment when quiet and ends between runs once `subscription_max_age` passed.

Not here (answered with 409 or 400, see docs/server.md): adding a message to a run that is
already active (Mastra injects it as a signal), `ifActive`, signal attributes, other signal
types, and thread peers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import Field, ValidationError

from sluicegate.agent import Agent
from sluicegate.errors import AccessDeniedError, APICallError, SluicegateError, public_text
from sluicegate.memory.errors import ThreadAccessError
from sluicegate.server.bodies import (
    AgentCallBody,
    _Body,
    call_options,
    drop_memory_without_memory,
    narrow_memory_options,
    narrow_retries,
)
from sluicegate.server.deps import ERRORS, agent_or_404, registry_of, settings_of
from sluicegate.server.errors import ApiError, bad_request, provider_error, thread_unavailable
from sluicegate.server.identity import bind_run, bound_resource, bound_thread, identity_of
from sluicegate.server.stream_bounds import detached_runs, subscriptions
from sluicegate.server.streaming import ChunkStreamResponse
from sluicegate.server.wire_events import events_for
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.run_log import RunInfo, RunLog, RunLogError, RunWriter

logger = logging.getLogger("sluicegate.server.signals")

router = APIRouter(prefix="/api/agents", tags=["agents"], responses=ERRORS)


@dataclass(slots=True)
class _Thread:
    """One thread's subscribers, its last announced run, and the message (and task) of a run
    `send-message` is starting or running."""

    subscribers: set[asyncio.Queue[str]] = field(default_factory=set)
    last_run: str | None = None
    pending: dict[str, Any] | None = None
    pending_resource: str | None = None
    signal: tuple[str, dict[str, Any]] | None = None
    task: asyncio.Task[None] | None = None
    task_run: str | None = None


class ThreadRunLog:
    """An agent's run log that also announces each run opened with a thread to the thread's
    subscribers. Reads and writes are the wrapped log's own."""

    def __init__(self, inner: RunLog) -> None:
        self.inner = inner
        self.threads: dict[str, _Thread] = {}

    async def open(
        self, run_id: str, *, agent_id: str, resource_id: str | None = None, thread_id: str | None = None
    ) -> RunWriter:
        writer = await self.inner.open(
            run_id, agent_id=agent_id, resource_id=resource_id, thread_id=thread_id
        )
        if thread_id is not None:
            thread = self.threads.get(thread_id)
            if thread is not None:
                thread.last_run = run_id
                # Only a run of the sender's resource claims its message: another resource
                # may open a run on the same thread id before the sender's run opens.
                if thread.pending is not None and thread.pending_resource in (None, resource_id):
                    thread.signal = (run_id, thread.pending)
                    thread.pending = None
                elif thread.signal is not None and thread.signal[0] != run_id:
                    thread.signal = None
                for queue in thread.subscribers:
                    queue.put_nowait(run_id)
        return writer

    async def info(self, run_id: str) -> RunInfo:
        return await self.inner.info(run_id)

    def read(self, run_id: str, offset: int = 0) -> AsyncIterator[Chunk[Any]]:
        return self.inner.read(run_id, offset)

    def thread(self, thread_id: str) -> _Thread:
        return self.threads.setdefault(thread_id, _Thread())

    def forget_if_unused(self, thread_id: str) -> None:
        thread = self.threads.get(thread_id)
        if thread is not None and not thread.subscribers and thread.task is None and thread.pending is None:
            del self.threads[thread_id]

    async def active_run(self, thread_id: str) -> str | None:
        """The thread's run that is still open, if the last one announced is."""
        thread = self.threads.get(thread_id)
        if thread is None or thread.last_run is None:
            return None
        try:
            info = await self.inner.info(thread.last_run)
        except RunLogError:
            return None
        return thread.last_run if info.status is None else None


def thread_log(agent: Agent) -> ThreadRunLog:
    """The agent's run log as a `ThreadRunLog` (wrapped once, on first use); 501 for an agent
    built with `run_log=None`, whose runs nobody can follow."""
    log = agent.run_log
    if log is None:
        raise ApiError(
            501, "this agent keeps no run log (run_log=None), so its threads cannot be subscribed to"
        )
    if isinstance(log, ThreadRunLog):
        return log
    wrapped = ThreadRunLog(log)
    agent.run_log = wrapped  # the runs read `agent.run_log` when they start
    return wrapped


async def _check_thread(request: Request, agent_id: str, thread_id: str, resource_id: str | None) -> None:
    """A thread of another resource is the 404 of an unknown one; a thread not created yet may
    be subscribed to (its runs are still filtered by resource)."""
    if resource_id is None:
        return
    store = registry_of(request).storage_for(agent_id)
    if store is None:
        return
    thread = await store.get_thread(thread_id)
    if thread is not None and thread.resource_id != resource_id:
        raise ApiError(404, f"threadId: thread {thread_id!r} not found", field="threadId")


class ThreadBody(_Body):
    resourceId: str | None = Field(default=None, min_length=1, max_length=256)
    threadId: str = Field(min_length=1, max_length=256)


class AbortThreadBody(ThreadBody):
    expectedRunId: str | None = Field(default=None, min_length=1, max_length=256)


def _target(request: Request, body: ThreadBody) -> tuple[str | None, str]:
    resource = bound_resource(request, body.resourceId, "resourceId")
    thread = bound_thread(request, body.threadId, "threadId")
    assert thread is not None  # a given thread id stays given
    return resource, thread


# ----------------------------------------------------------------------------- subscribe


async def _thread_chunks(
    log: ThreadRunLog,
    agent_id: str,
    thread_id: str,
    resource: str | None,
    trusted: bool,
    max_age: float,
) -> AsyncIterator[Chunk[Any]]:
    """Every chunk of the thread's runs, the open one first, until the client leaves or, once
    `max_age` seconds have passed, until no run is being streamed (a run is never cut short).
    A run of another resource (or agent) on the same thread id is skipped unless the caller is
    trusted (no identity hook and no resource named)."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    thread = log.thread(thread_id)
    thread.subscribers.add(queue)
    ends = asyncio.get_running_loop().time() + max_age
    try:
        active = await log.active_run(thread_id)
        if active is not None:
            queue.put_nowait(active)
        seen: set[str] = set()
        while True:
            try:
                async with asyncio.timeout_at(ends):
                    run_id = await queue.get()
            except TimeoutError:
                return  # its lifetime is over: the client subscribes again
            if run_id in seen:
                continue
            seen.add(run_id)
            try:
                info = await log.info(run_id)
            except RunLogError:
                continue
            if info.agent_id != agent_id or (not trusted and info.resource_id != resource):
                continue
            if thread.signal is not None and thread.signal[0] == run_id:
                part: Chunk[Any] = Chunk("data-user-message", run_id, data=thread.signal[1])
                part.transient = True
                yield part
            try:
                async for chunk in log.read(run_id):
                    yield chunk
            except RunLogError as exc:  # the run left the log (or its Redis failed): go on
                logger.warning("thread %r: run %r could not be followed: %s", thread_id, run_id, exc)
    finally:
        thread.subscribers.discard(queue)
        log.forget_if_unused(thread_id)


@router.post(
    "/{agentId}/threads/subscribe",
    responses={
        200: {
            "description": "Server-sent events: the chunks of the thread's open run and of every later "
            "run, until the client leaves.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        404: ERRORS[404] | {"description": "No such agent, or the thread is another resource's."},
        429: ERRORS[400] | {"description": "Too many open subscriptions (`bound` names the limit)."},
        501: ERRORS[400] | {"description": "The agent keeps no run log."},
    },
    response_class=JSONResponse,
)
async def subscribe_to_thread(agentId: str, body: ThreadBody, request: Request) -> Any:
    """Follow a memory thread: its open run and each run started on it later, in Mastra's SSE
    framing, with a `: heartbeat` comment line when it is quiet. Leaving stops nothing; the
    stream ends (between runs) after `subscription_max_age`."""
    _, agent = agent_or_404(request, agentId)
    resource, thread_id = _target(request, body)
    await _check_thread(request, agent.id, thread_id, resource)
    log = thread_log(agent)
    trusted = identity_of(request) is None and resource is None
    settings = settings_of(request)
    release = subscriptions(request).take(resource)  # 429 past a bound

    async def given_back() -> None:
        release()

    return ChunkStreamResponse(
        _thread_chunks(log, agent.id, thread_id, resource, trusted, settings.subscription_max_age),
        run_id="",
        timeout=None,
        error_details=agent.provider_error_details,
        on_end=given_back,
        events=events_for(agent),
    )


# ----------------------------------------------------------------------------- send-message


class IfIdle(_Body):
    behavior: Literal["wake"] | None = None
    streamOptions: dict[str, Any] | None = None


class MessageWithMetadata(_Body):
    contents: str | list[dict[str, Any]]
    metadata: dict[str, Any] | None = None


class SendMessageBody(ThreadBody):
    message: str | list[dict[str, Any]] | MessageWithMetadata
    ifIdle: IfIdle | None = None
    ifActive: Any = None


def _stream_body(
    body: SendMessageBody, contents: Any, resource: str | None, message_id: str
) -> AgentCallBody:
    """The stream request the message starts: the client's `ifIdle.streamOptions`, the message
    as the one user message, on the body's thread. The message is stored under the signal's id,
    as Mastra stores it, so a client merging the thread's stored messages into what it was
    shown recognises the one it already has."""
    options = dict(body.ifIdle.streamOptions or {}) if body.ifIdle is not None else {}
    for taken in ("messages", "memory", "threadId", "resourceId"):
        if taken in options:
            raise bad_request(f"ifIdle.streamOptions.{taken}", "is set by send-message itself")
    memory: dict[str, Any] = {"thread": body.threadId}
    if resource is not None:
        memory["resource"] = resource
    try:
        return AgentCallBody.model_validate(
            {
                **options,
                "messages": [{"id": message_id, "role": "user", "content": contents}],
                "memory": memory,
            }
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise bad_request(f"ifIdle.streamOptions.{where}", error["msg"]) from None


async def _start(agent: Agent, call: AgentCallBody, request: Request) -> tuple[Any, str | None]:
    """The started stream, as `POST /stream` starts it (the same options, narrowing and
    identity binding), and a warning for an ignored `memory` option."""
    messages, options = call_options(call, settings_of(request))
    warning = drop_memory_without_memory(agent, options)
    narrow_memory_options(agent, call, options)
    narrow_retries(agent, options)
    bind_run(request, call, options, has_memory=agent.memory is not None)
    try:
        return await agent.stream(messages, **options), warning
    except ThreadAccessError as exc:
        raise thread_unavailable("threadId", exc.thread_id) from exc
    except AccessDeniedError as exc:
        raise ApiError(403, str(exc), field="resourceId") from exc
    except APICallError as exc:
        raise provider_error(exc, details=agent.provider_error_details) from exc
    except (SluicegateError, TypeError, ValueError) as exc:
        message = str(exc) if agent.provider_error_details else public_text(exc)
        raise ApiError(400, message) from exc


async def _drive(log: ThreadRunLog, thread_id: str, chunks: AsyncIterator[Any], limit: float | None) -> None:
    """Run a started stream to its end (the subscribers read it from the log)."""
    thread = log.thread(thread_id)
    try:
        async with asyncio.timeout(limit):
            async for _ in chunks:
                pass
    except TimeoutError:
        logger.warning("thread %r: the run did not finish within %s s and was cancelled", thread_id, limit)
    except asyncio.CancelledError:
        pass
    except Exception:
        logger.exception("thread %r: the run failed", thread_id)
    finally:
        closer = getattr(chunks, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
        thread.task = None
        thread.task_run = None
        log.forget_if_unused(thread_id)


async def _send(agentId: str, body: SendMessageBody, request: Request) -> dict[str, Any]:
    _, agent = agent_or_404(request, agentId)
    resource, thread_id = _target(request, body)
    if body.ifActive is not None:
        raise bad_request("ifActive", "messages cannot be added to a run that is already active here")
    if agent.memory is None:
        raise bad_request("threadId", f"agent {agent.id!r} has no memory, so it has no threads to message")
    store = registry_of(request).storage_for(agent.id)
    found = await store.get_thread(thread_id) if store is not None else None
    if found is not None and resource is not None and found.resource_id != resource:
        raise thread_unavailable("threadId", thread_id)  # as a run on another's thread is refused
    log = thread_log(agent)
    thread = log.thread(thread_id)
    if thread.pending is not None or thread.task is not None or await log.active_run(thread_id) is not None:
        raise ApiError(
            409,
            f"threadId: a run is already active on thread {thread_id!r}; send the message after it",
            field="threadId",
        )
    if isinstance(body.message, MessageWithMetadata):
        contents: Any = body.message.contents
        metadata = body.message.metadata
    else:
        contents, metadata = body.message, None
    signal_id = str(uuid.uuid4())
    call = _stream_body(body, contents, resource, signal_id)
    signal: dict[str, Any] = {
        "id": signal_id,
        "type": "user-message",
        "contents": contents,
        "createdAt": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
    }
    if metadata:
        signal["metadata"] = metadata
    release = detached_runs(request).take(resource)  # 429 past a bound
    thread.pending = signal
    thread.pending_resource = resource
    try:
        output, warning = await _start(agent, call, request)
    except BaseException:
        release()
        thread.pending = None
        log.forget_if_unused(thread_id)
        raise
    if thread.pending is signal:  # the run opened no log entry yet (it does on its first step)
        thread.pending = None
        thread.signal = (output.run_id, signal)
    if warning is not None:
        logger.warning("thread %r: %s", thread_id, warning)
    thread.task_run = output.run_id
    thread.task = asyncio.create_task(
        _drive(log, thread_id, output.full_stream, settings_of(request).request_timeout)
    )
    # Given back however the task ends: also a task cancelled before its first step, whose
    # coroutine never runs (so never reaches a `finally`).
    thread.task.add_done_callback(lambda _: release())
    return {"accepted": True, "runId": output.run_id, "signal": signal}


_SEND_RESPONSES: dict[int | str, dict[str, Any]] = {
    409: ERRORS[400] | {"description": "A run is already active on the thread."},
    429: ERRORS[400] | {"description": "Too many detached runs (`bound` names the limit)."},
    501: ERRORS[400] | {"description": "The agent keeps no run log."},
}


@router.post("/{agentId}/send-message", responses=_SEND_RESPONSES)
async def send_message(agentId: str, body: SendMessageBody, request: Request) -> dict[str, Any]:
    """Start a run on an idle memory thread with this user message; the thread's subscribers
    receive it. Answers `{accepted, runId, signal}` at once."""
    return await _send(agentId, body, request)


@router.post("/{agentId}/queue-message", responses=_SEND_RESPONSES)
async def queue_message(agentId: str, body: SendMessageBody, request: Request) -> dict[str, Any]:
    """As `send-message`: with no run active there is nothing to queue behind."""
    return await _send(agentId, body, request)


@router.post("/{agentId}/threads/abort")
async def abort_thread(agentId: str, body: AbortThreadBody, request: Request) -> dict[str, Any]:
    """Cancel the thread's run that `send-message` started (`{aborted: false}` when there is
    none, or it is not `expectedRunId`). A run streamed to its own request stops when that
    request does."""
    _, agent = agent_or_404(request, agentId)
    resource, thread_id = _target(request, body)
    await _check_thread(request, agent.id, thread_id, resource)
    log = thread_log(agent)
    thread = log.threads.get(thread_id)
    if thread is None or thread.task is None or thread.task_run is None:
        return {"aborted": False}
    if body.expectedRunId is not None and body.expectedRunId != thread.task_run:
        return {"aborted": False}
    info = await log.info(thread.task_run)
    trusted = identity_of(request) is None and resource is None
    if info.agent_id != agent.id or (not trusted and info.resource_id != resource):
        return {"aborted": False}
    thread.task.cancel()
    return {"aborted": True}
