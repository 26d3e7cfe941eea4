"""Starting durable runs and deciding their approvals, from any process (the server, a script).

A run's chunks are read with the agent's own `observe(run_id=...)`: the activities publish them
to the agent's run log (a `RedisRunLog` serves every instance), so the stream routes work as
for in-process runs.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from sluicegate.agent.call_options import normalize_tool_choice
from sluicegate.agent.run_options import check_retries
from sluicegate.durable.temporal import names
from sluicegate.durable.temporal.payloads import checked
from sluicegate.durable.temporal.trace_context import KEY, checked_carrier, inject
from sluicegate.errors import InvalidInputError, SluicegateError
from sluicegate.messages.validate import validate_input
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.storage.errors import SuspendedRunNotFoundError
from sluicegate.stream.run_log import RunNotFoundError

if TYPE_CHECKING:
    from sluicegate.agent import Agent
    from sluicegate.agent.observe import ObservedOutput

_SETTINGS = frozenset(
    (
        "heartbeatTimeout",
        "modelTimeout",
        "toolTimeout",
        "storageTimeout",
        "modelAttempts",
        "toolAttempts",
        "storageAttempts",
        "retryInterval",
        "workflowTaskTimeout",
    )
)


def check_durable_memory(agent: Agent[Any], memory: Any) -> None:
    """`memory=` of a durable run: `{"thread": ..., "resource": ...}` (strings), on an agent with
    memory (per-run memory options are not taken: every worker replays with the agent's own)."""
    if agent.memory is None:
        raise InvalidInputError(f"memory: agent {agent.id!r} has no memory")
    if not isinstance(memory, dict) or set(memory) - {"thread", "resource"} or "thread" not in memory:
        raise InvalidInputError('memory must be {"thread": ..., "resource": ...} in a durable run')
    if not all(isinstance(v, str) and v for v in memory.values()):
        raise InvalidInputError("memory: thread and resource must be non-empty strings")


def check_tuning(tool_choice: Any, max_processor_retries: Any) -> None:
    """A durable run's `tool_choice` and `max_processor_retries`, checked as a call in one
    process checks them (`InvalidInputError` naming the option)."""
    try:
        normalize_tool_choice(tool_choice)
        check_retries(max_processor_retries)
    except SluicegateError as exc:
        raise InvalidInputError(str(exc)) from None
    if isinstance(tool_choice, dict):
        name = tool_choice.get("tool_name", tool_choice.get("toolName"))
        if set(tool_choice) - {"type", "tool_name", "toolName"} or not isinstance(name, str | None):
            raise InvalidInputError(
                "tool_choice must be 'auto', 'none', 'required' or {'type': 'tool', 'tool_name': <str>}"
            )


def _seconds(settings: dict[str, Any], name: str) -> timedelta | None:
    value = settings.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 120:
        raise InvalidInputError(f"settings.{name} must be a number of seconds in (0, 120], got {value!r}")
    return timedelta(seconds=value)


_FIRST_POLL = 0.005
_LAST_POLL = 0.1
_STEADY = 0.1
"""Seconds between looks at the run log while a run is awaited: every `_FIRST_POLL` for the
first `_STEADY` (a worker that polls opens a run within milliseconds: its first model call
does), then less often, at most ten times a second (workers starting)."""


def _next_poll(delay: float, waited: float) -> float:
    return delay if waited < _STEADY else min(delay * 2, _LAST_POLL)


class WorkerUnavailableError(SluicegateError):
    """No worker answered for the run (none is running on its task queue, or all are busy)."""

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(
            f"no worker answered for run {run_id!r} ({reason}); is a `sluicegate worker` running?"
        )
        self.run_id = run_id


class TemporalRuns:
    """Runs of agents on Temporal, through `client` on `task_queue`."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str = names.DEFAULT_TASK_QUEUE,
        settings: dict[str, Any] | None = None,
    ) -> None:
        unknown = set(settings or {}) - _SETTINGS
        if unknown:
            raise InvalidInputError(
                f"unknown durable run setting(s) {sorted(unknown)}; known: {sorted(_SETTINGS)}"
            )
        self.client = client
        self.task_queue = task_queue
        self.settings = dict(settings or {})
        self._task_timeout = _seconds(self.settings, "workflowTaskTimeout")
        """How soon a workflow task of a dead worker goes to another (Temporal's default: 10 s)."""

    @classmethod
    async def connect(cls, target: str, **options: Any) -> TemporalRuns:
        return cls(await Client.connect(target), **options)

    async def start(
        self,
        agent: Agent[Any],
        messages: Any,
        *,
        request_context: RequestContext | None = None,
        max_steps: int | None = None,
        require_tool_approval: bool | None = None,
        memory: dict[str, str] | None = None,
        run_id: str | None = None,
        trace_context: Mapping[str, str] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        max_processor_retries: int | None = None,
    ) -> str:
        """Start a run; its id (the workflow id). Bad input is refused here, before Temporal.

        The run's options are JSON the workers replay from: `max_steps`, `require_tool_approval`,
        `memory`, `tool_choice`, `max_processor_retries`, checked as `agent.stream` checks them.
        What is an object of the worker's application (processor arrays, `prepare_step`) is the
        worker's agent's: its arrays, its `default_options`; a variant is an agent of its own
        registered with the worker (see docs/durable.md).

        The run's trace continues the caller's: `trace_context` (`{"traceparent": ...,
        "tracestate"?: ...}`, W3C), else the span current here; its `invoke_agent` span is a
        child of that span."""
        validate_input(messages, max_chars=agent.max_input_chars)
        if max_steps is not None and (
            not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1
        ):
            raise InvalidInputError(f"max_steps must be a positive integer, got {max_steps!r}")
        if require_tool_approval is not None and not isinstance(require_tool_approval, bool):
            raise InvalidInputError("require_tool_approval must be True or False in a durable run")
        if memory is not None:
            check_durable_memory(agent, memory)
        check_tuning(tool_choice, max_processor_retries)
        caller: dict[str, str] | None = None
        if trace_context is not None:
            caller = checked_carrier(trace_context)
            if caller is None:
                raise InvalidInputError(
                    "trace_context must be a W3C trace context "
                    "({'traceparent': '00-<trace id>-<span id>-<flags>'})"
                )
        run_id = run_id or str(uuid.uuid4())
        start: dict[str, Any] = {
            "agentId": agent.id,
            "messages": messages,
            "requestContext": (request_context or RequestContext()).to_dict(),
            "maxSteps": max_steps,
            "requireToolApproval": require_tool_approval,
            "memory": memory,
            "settings": self.settings,
            names.FORMAT: names.RUN_FORMAT,
        }
        if tool_choice is not None:
            start["toolChoice"] = tool_choice
        if max_processor_retries is not None:
            start["maxProcessorRetries"] = max_processor_retries
        if caller is not None:
            start[KEY] = caller
        else:
            inject(start)  # the span current here, if any
        start = checked("the run's input (messages and request context)", start)
        try:
            await self.client.start_workflow(
                names.WORKFLOW,
                start,
                id=run_id,
                task_queue=self.task_queue,
                task_timeout=self._task_timeout,
                # A run id names one run: a reused one would write into the earlier run's log.
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            )
        except WorkflowAlreadyStartedError:
            raise InvalidInputError(f"run_id: {run_id!r} already names a run; pass a new id") from None
        return run_id

    async def observe(
        self, agent: Agent[Any], run_id: str, *, offset: int = 0, wait: float = 30.0, **options: Any
    ) -> ObservedOutput:
        """`agent.observe(run_id=..., offset=...)`, waiting (up to `wait` seconds) for a run
        just started to open in the log: a worker opens it, not the caller, and none may be
        polling yet (workers starting). `WorkerUnavailableError` when it has not opened by then.

        Whether the run is in the log is looked up *before* each attempt: a run that opens
        between a failed attempt and the look-up is tried again, so only a run that was there
        all along and still refuses the caller is another's (`RunNotFoundError`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        delay = _FIRST_POLL
        while True:
            present = await self._in_log(agent, run_id)
            try:
                return await agent.observe(run_id=run_id, offset=offset, **options)
            except RunNotFoundError:
                if present:
                    raise  # in the log but not this caller's: no waiting changes that
            if loop.time() >= deadline:
                raise WorkerUnavailableError(run_id, f"the run did not open in the run log within {wait:g} s")
            await asyncio.sleep(delay)
            delay = _next_poll(delay, wait - (deadline - loop.time()))

    async def continuation(
        self, agent: Agent[Any], run_id: str, offset: int, *, wait: float = 30.0, **options: Any
    ) -> ObservedOutput:
        """The run's stream from `offset` (a decision's answer) once the run has gone on: a
        decision is accepted before a worker reopens the run in the log, and reading it then
        would find it still closed `suspended` at `offset` and end at once. Waits up to `wait`
        seconds for the log to show the run open again or past `offset` (it may have ended, or
        suspended again, already); `WorkerUnavailableError` when it has not by then (the
        decision stands: observe the run from `offset` later)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        delay = _FIRST_POLL
        run_log = agent.run_log
        while run_log is not None:
            info = await run_log.info(run_id)
            if info.status != "suspended" or info.next_offset > offset:
                break
            if loop.time() >= deadline:
                raise WorkerUnavailableError(
                    run_id,
                    f"the decision was taken but the run did not go on within {wait:g} s; "
                    f"observe it from offset {offset}",
                )
            await asyncio.sleep(delay)
            delay = _next_poll(delay, wait - (deadline - loop.time()))
        return await agent.observe(run_id=run_id, offset=offset, **options)

    @staticmethod
    async def _in_log(agent: Agent[Any], run_id: str) -> bool:
        run_log = agent.run_log
        if run_log is None:
            return True
        try:
            await run_log.info(run_id)
        except RunNotFoundError:
            return False
        return True

    async def result(self, run_id: str) -> dict[str, Any]:
        """The run's result once it ends: text, finish reason, usage, tripwire, messages."""
        return await self.client.get_workflow_handle(run_id).result()  # type: ignore[no-any-return]

    async def output(self, run_id: str) -> dict[str, Any] | None:
        """The run's output when it last stopped, in `result`'s shape: a run waiting for a
        decision answers with what it had produced (`suspendPayload` names the call it waits
        on); None before the run first stops. A run that ended answers with its result, read
        from its history. (Ask only once the run stopped: a query that reaches a workflow just
        after it completed replays it, its processors' workflow code included.)"""
        handle = self.client.get_workflow_handle(run_id)
        try:
            description = await handle.describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise SuspendedRunNotFoundError(run_id, "unknown") from None
            raise WorkerUnavailableError(run_id, exc.message) from exc
        if description.status is not None and description.status != WorkflowExecutionStatus.RUNNING:
            # Ended: its result is in the history (a query would replay the whole run).
            return await self.result(run_id)
        try:
            return await handle.query(names.OUTPUT)  # type: ignore[no-any-return]
        except RPCError as exc:
            raise WorkerUnavailableError(run_id, exc.message) from exc

    async def pending_tool_call(self, run_id: str) -> dict[str, Any] | None:
        """The call the run waits on (`toolCallId`, `toolName`, `kind`, `args`, `resourceId`), or None."""
        try:
            return await self.client.get_workflow_handle(run_id).query(names.PENDING)  # type: ignore[no-any-return]
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise SuspendedRunNotFoundError(run_id, "unknown") from None
            raise WorkerUnavailableError(run_id, exc.message) from exc

    async def approve_tool_call(
        self, run_id: str, tool_call_id: str | None = None, *, request_context: RequestContext | None = None
    ) -> dict[str, Any]:
        """Approve the pending call; `{"runId", "offset"}`: observe from `offset` for the rest.
        As in one process, only a caller whose `request_context` names the run's resource (or
        none, for a run without one) may decide; anyone else is told there is no such run."""
        return await self._update(run_id, names.APPROVE, [tool_call_id], request_context)

    async def decline_tool_call(
        self,
        run_id: str,
        tool_call_id: str | None = None,
        reason: str | None = None,
        *,
        request_context: RequestContext | None = None,
    ) -> dict[str, Any]:
        return await self._update(run_id, names.DECLINE, [tool_call_id, reason], request_context)

    async def resume_stream(
        self,
        run_id: str,
        resume_data: Any,
        tool_call_id: str | None = None,
        *,
        request_context: RequestContext | None = None,
    ) -> dict[str, Any]:
        return await self._update(run_id, names.RESUME, [tool_call_id, resume_data], request_context)

    async def _update(
        self, run_id: str, name: str, args: list[Any], request_context: RequestContext | None
    ) -> dict[str, Any]:
        caller = request_context.get(RESOURCE_ID_KEY) if request_context is not None else None
        pending = await self.pending_tool_call(run_id)
        if pending is None or pending.get("resourceId") != caller:
            raise SuspendedRunNotFoundError(run_id, "unknown")
        # Without an id, decide the call just checked: if another decision lands first, the run
        # may wait on a later call this caller never saw, which the update then refuses as stale.
        args = checked(
            "the decision (tool call id, reason, resume data)", [args[0] or pending["toolCallId"], *args[1:]]
        )
        handle = self.client.get_workflow_handle(run_id)
        try:
            return await handle.execute_update(name, args=args)  # type: ignore[no-any-return]
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError) and cause.type == "NotWaiting":
                raise SuspendedRunNotFoundError(run_id, "unknown") from None
            raise InvalidInputError(getattr(cause, "message", str(cause))) from None
