"""A2A (protocol 0.3, JSON-RPC), as Mastra serves it: `GET /api/.well-known/{agentId}/agent-card.json`
and `POST /api/a2a/{agentId}` with `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`.

A message starts a run through `agents.start_stream` (bound to the caller's identity like
every run; the `contextId` is the memory thread when the agent has memory) and its chunks, after
the output processors, become the task's events (`events.TaskEvents`). A run waiting for
approval leaves the task `input-required`; the next message on that task (`taskId`) answers it:
"approve" / "decline", or a data part `{"approved": bool, "reason"}`; anything else is refused,
so nothing is approved by accident. Params are checked against the `a2a-sdk` package's 0.3
types (the `a2a` extra); an error is a JSON-RPC error object naming what was wrong.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from opentelemetry import trace
from pydantic import ValidationError

from sluicegate import __version__
from sluicegate.agent import Agent
from sluicegate.errors import MissingExtraError
from sluicegate.server.agents import run_to_end, span_attributes
from sluicegate.server.bodies import AgentCallBody
from sluicegate.server.deps import ERRORS, agent_or_404, settings_of
from sluicegate.server.errors import ApiError
from sluicegate.server.identity import identity_of
from sluicegate.server.plain_json import find_problem
from sluicegate.server.protocols.a2a.events import TaskEvents, agent_message
from sluicegate.server.protocols.a2a.tasks import TERMINAL, TaskBook, TaskRecord
from sluicegate.server.protocols.responses import runs
from sluicegate.server.settings import durable_runs
from sluicegate.server.streaming import ChunkStreamResponse, EncodedFrames, sse
from sluicegate.server.traces import run_span, start_request_span, trace_headers

router = APIRouter(prefix="/api", tags=["a2a"])

PROTOCOL_VERSION = "0.3.0"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
TASK_NOT_FOUND, TASK_NOT_CANCELABLE, UNSUPPORTED = -32001, -32002, -32004
_RUN_FIELDS = {"memory.thread": "params.message.contextId", "memory.resource": "params.metadata.resourceId"}
"""Where a run option the body became came from, to name it in an error."""
_APPROVE = frozenset(("approve", "approved", "yes", "y"))
_DECLINE = frozenset(("decline", "declined", "deny", "no", "n"))


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def _types() -> Any:
    try:
        from a2a.compat.v0_3 import types
    except ImportError as exc:
        raise MissingExtraError("a2a-sdk", extra="a2a", feature="A2A") from exc
    return types


def _book(request: Request) -> TaskBook:
    book: TaskBook | None = getattr(request.app.state, "a2a_tasks", None)
    if book is None:
        book = request.app.state.a2a_tasks = TaskBook()
    return book


def _caller(request: Request) -> str | None:
    identity = identity_of(request)
    return identity.resource_id if identity is not None else None


# ----------------------------------------------------------------------------- the card


@router.get("/.well-known/{agentId}/agent-card.json", responses=ERRORS)
async def agent_card(agentId: str, request: Request) -> dict[str, Any]:
    """The agent's A2A card: where to call it, what it can do (its tools as skills), and the
    bearer scheme when the server requires a token. The agent's instructions stay private."""
    key, agent = agent_or_404(request, agentId)
    card: dict[str, Any] = {
        "protocolVersion": PROTOCOL_VERSION,
        "name": key,
        "description": agent.description or f"The {agent.name} agent.",
        "url": str(request.url_for("a2a_rpc", agentId=key)),
        "preferredTransport": "JSONRPC",
        "version": __version__,
        "provider": {"organization": "sluicegate", "url": str(request.base_url).rstrip("/")},
        "capabilities": {"streaming": True, "pushNotifications": False, "stateTransitionHistory": False},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {"id": name, "name": name, "description": tool.description or f"Tool: {name}", "tags": ["tool"]}
            for name, tool in (agent.tools or {}).items()
        ],
    }
    if settings_of(request).api_token:
        card["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        card["security"] = [{"bearer": []}]
    _types().AgentCard.model_validate(card)  # the shape the A2A SDK reads
    return card


# ----------------------------------------------------------------------------- JSON-RPC


def _answer(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, error: RpcError) -> JSONResponse:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": body})


def _params(model: Any, params: Any) -> Any:
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in ("params", *first["loc"]))
        raise RpcError(INVALID_PARAMS, f"{where}: {first['msg']}", {"field": where}) from None


def _api_error(exc: ApiError) -> RpcError:
    code = INTERNAL_ERROR if exc.status >= 500 else INVALID_PARAMS
    return RpcError(code, exc.message, {"status": exc.status, "field": exc.field} if exc.field else None)


@router.post("/a2a/{agentId}", name="a2a_rpc", responses=ERRORS, response_class=JSONResponse)
async def a2a_rpc(agentId: str, request: Request) -> Any:
    """One JSON-RPC 2.0 request: `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`."""
    key, agent = agent_or_404(request, agentId)
    request_id: Any = None
    try:
        try:
            data = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError) as exc:
            raise RpcError(PARSE_ERROR, f"the body is not JSON: {exc}") from None
        if (
            not isinstance(data, dict)
            or data.get("jsonrpc") != "2.0"
            or not isinstance(data.get("method"), str)
        ):
            raise RpcError(INVALID_REQUEST, 'a JSON-RPC 2.0 request needs "jsonrpc": "2.0" and a "method"')
        request_id = data.get("id")
        if request_id is not None and (
            not isinstance(request_id, (str, int)) or isinstance(request_id, bool)
        ):
            request_id = None
            raise RpcError(INVALID_REQUEST, "id must be a string, a number or null")
        problem = find_problem(data)
        if problem is not None:
            if problem[0] == "id":
                request_id = None
            raise RpcError(INVALID_PARAMS, f"{problem[0]}: {problem[1]}", {"field": problem[0]})
        method, params = data["method"], data.get("params")
        if method in ("message/send", "message/stream"):
            return await _message(request, key, agent, request_id, params, stream=method == "message/stream")
        if method == "tasks/get":
            query = _params(_types().TaskQueryParams, params)
            task = _task(request, key, query.id)
            return JSONResponse(_answer(request_id, task.to_json(query.history_length)))
        if method == "tasks/cancel":
            return JSONResponse(
                _answer(request_id, _cancel(request, key, _params(_types().TaskIdParams, params).id))
            )
        raise RpcError(METHOD_NOT_FOUND, f"method {method!r} is not served here")
    except RpcError as exc:
        return _error(request_id, exc)
    except ApiError as exc:
        return _error(request_id, _api_error(exc))


def _task(request: Request, key: str, task_id: str) -> TaskRecord:
    task = _book(request).get(task_id, agent_key=key, owner=_caller(request))
    if task is None:
        raise RpcError(TASK_NOT_FOUND, f"task {task_id!r} not found", {"taskId": task_id})
    return task


def _cancel(request: Request, key: str, task_id: str) -> dict[str, Any]:
    """Stop the task's run (it ends `canceled`), or cancel a task that waits for approval."""
    task = _task(request, key, task_id)
    if task.state in TERMINAL:
        raise RpcError(TASK_NOT_CANCELABLE, f"task {task_id!r} is {task.state} already", {"taskId": task_id})
    if task.abort is not None:
        task.abort.set()
    elif task.state == "working":  # a durable run outlives its request: Temporal stops it
        raise RpcError(TASK_NOT_CANCELABLE, f"task {task_id!r} is a durable run; cancel its workflow")
    else:
        task.pending = None
        task.run_id = None
        task.set_state("canceled", agent_message(task, "The task was canceled."))
    return task.to_json()


def _text_of(message: Any) -> tuple[str, dict[str, Any] | None]:
    """A message's text parts joined, and its first data part."""
    texts: list[str] = []
    data: dict[str, Any] | None = None
    for index, part in enumerate(message.parts):
        inner = part.root
        if inner.kind == "text":
            texts.append(inner.text)
        elif inner.kind == "data" and data is None:
            data = inner.data
        else:
            where = f"params.message.parts.{index}"
            raise RpcError(INVALID_PARAMS, f"{where}: {inner.kind} parts are not supported", {"field": where})
    return "".join(texts), data


def _approval_answer(text: str, data: dict[str, Any] | None) -> tuple[bool, str | None]:
    if data is not None and isinstance(data.get("approved"), bool):
        reason = data.get("reason")
        return data["approved"], reason if isinstance(reason, str) else None
    word = text.strip().lower().rstrip(".!")
    if word in _APPROVE:
        return True, None
    if word in _DECLINE:
        return False, None
    raise RpcError(
        INVALID_PARAMS,
        'the task waits for approval: answer "approve" or "decline" (or a data part {"approved": bool})',
        {"field": "params.message.parts"},
    )


async def _message(
    request: Request, key: str, agent: Agent, request_id: Any, params: Any, *, stream: bool
) -> Any:
    send = _params(_types().MessageSendParams, params)
    message = send.message
    if message.role.value != "user":
        raise RpcError(INVALID_PARAMS, "params.message.role: must be user", {"field": "params.message.role"})
    text, data = _text_of(message)
    wire = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    approved, reason = False, None
    if message.task_id is not None:
        task = _task(request, key, message.task_id)
        if message.context_id is not None and message.context_id != task.context_id:
            raise RpcError(INVALID_PARAMS, "params.message.contextId: is not the task's context")
        if task.state != "input-required" or task.pending is None or task.run_id is None:
            raise RpcError(UNSUPPORTED, f"task {task.id!r} is {task.state}: it takes no more messages")
        approved, reason = _approval_answer(text, data)
        task.history.append(wire)
    else:
        if not text:
            raise RpcError(INVALID_PARAMS, "params.message.parts: the message has no text")
        task = _new_task(request, key, agent, message, send.metadata)
        task.history.append({**wire, "taskId": task.id, "contextId": task.context_id})
    span = start_request_span(f"POST a2a {agent.name}", span_attributes(request, key))
    try:
        with trace.use_span(span, end_on_exit=False):  # the run's own spans start under it
            if message.task_id is not None:
                output = await _decide(request, agent, task, approved, reason)
            else:
                output = await _start(request, agent, task, text)
    except BaseException:
        span.end()
        raise
    task.set_state("working")
    translator = TaskEvents(task, error_details=agent.provider_error_details)
    frames = translator.frames(output.full_stream, request_id)
    if stream:
        return ChunkStreamResponse(
            _opened(request_id, task, frames),
            run_id=output.run_id,
            timeout=settings_of(request).request_timeout,
            error_details=agent.provider_error_details,
            headers=trace_headers(span),
            span=lambda: run_span(span),
            encoder=EncodedFrames(
                lambda text, _name: sse(
                    {"jsonrpc": "2.0", "id": request_id, "error": {"code": INTERNAL_ERROR, "message": text}}
                )
            ),
            done=b"",
        )

    async def collect() -> None:
        with run_span(span):
            async for _ in frames:
                pass

    try:
        await run_to_end(request, collect())
    finally:
        task.abort = None
    return JSONResponse(_answer(request_id, task.to_json()), headers=trace_headers(span))


async def _opened(request_id: Any, task: TaskRecord, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The task as it starts, then the run's frames."""
    yield sse(_answer(request_id, task.to_json()))
    async for frame in frames:
        yield frame


def _new_task(
    request: Request, key: str, agent: Agent, message: Any, metadata: dict[str, Any] | None
) -> TaskRecord:
    caller = _caller(request)
    named = (metadata or {}).get("resourceId") or (message.metadata or {}).get("resourceId")
    resource = caller or (named if isinstance(named, str) and named else None)
    if caller is not None and named not in (None, caller):
        raise RpcError(INVALID_PARAMS, f"metadata.resourceId: {named!r} is not the authenticated resource")
    book = _book(request)
    task_id = str(uuid.uuid4())
    while task_id in book:
        task_id = str(uuid.uuid4())
    task = TaskRecord(
        id=task_id,
        context_id=message.context_id or str(uuid.uuid4()),
        agent_key=key,
        owner=caller,
        resource=resource or (key if agent.memory is not None else None),
    )
    book.add(task)
    return task


async def _start(request: Request, agent: Agent, task: TaskRecord, text: str) -> Any:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    if agent.memory is not None and task.resource is not None:
        body["memory"] = {"thread": task.context_id, "resource": task.resource}
    try:
        call = AgentCallBody.model_validate(body)
    except ValidationError as exc:
        task.set_state("failed")
        first = exc.errors()[0]
        where = _RUN_FIELDS.get(".".join(str(p) for p in first["loc"]), "params.message")
        raise RpcError(INVALID_PARAMS, f"{where}: {first['msg']}", {"field": where}) from None
    abort = None if durable_runs() else asyncio.Event()
    try:
        output = await runs.start(agent, call, request, abort_signal=abort)
    except BaseException:
        task.set_state("failed")
        raise
    task.abort = abort
    return output


async def _decide(
    request: Request, agent: Agent, task: TaskRecord, approved: bool, reason: str | None
) -> Any:
    """The waiting run continued by the answer (for the resource the run is bound to)."""
    assert task.run_id is not None and task.pending is not None
    abort = None if durable_runs() else asyncio.Event()
    try:
        output = await runs.decide(
            request,
            agent,
            run_id=task.run_id,
            tool_call_id=task.pending,
            approve=approved,
            reason=reason,
            resource=task.resource,
            abort_signal=abort,
        )
    except ApiError as exc:
        raise _api_error(exc) from exc
    task.run_id = task.pending = None
    task.abort = abort
    return output
