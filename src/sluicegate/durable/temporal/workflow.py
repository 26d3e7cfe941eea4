"""`AgentWorkflow`: one agent run as a Temporal workflow.

The workflow runs the agent's own loop (`AgentRun.events()`, the processor chain included) as
deterministic workflow code; what touches the world is an activity (see `activities`): each
model call (its provider stream and the output stream processors, which publish live), each
tool call, the workflow's own chunks into the run log. A crashed worker's run continues on
another from its history: finished activities are not run again, the interrupted one is
retried. The run id is the workflow id, and the ids the loop makes (messages, tool calls) come
from `workflow.uuid4()` (installed for the workflow's context with `sluicegate.ids`, nowhere
else in the process) and the times it stamps from `workflow.time_ns()` (`sluicegate.clock`,
likewise), so a replay rebuilds the same messages.

A run that waits for a person stays a waiting workflow: `approve_tool_call`,
`decline_tool_call` and `resume_stream` are updates, validated before anything changes.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError

from sluicegate.agent.decisions import (
    Action,
    PendingCall,
    StaleToolCallError,
    WrongDecisionError,
    decide,
)
from sluicegate.agent.resume import resumed_run
from sluicegate.agent.suspension import json_context
from sluicegate.clock import use_time_source
from sluicegate.durable.temporal import names, spend, workflow_spans
from sluicegate.durable.temporal.checks import check_returned
from sluicegate.durable.temporal.failures import from_activity_error
from sluicegate.durable.temporal.judges import ActivityOptions, judged_processor, judges_in_workflow
from sluicegate.durable.temporal.payloads import checked, encoded
from sluicegate.durable.temporal.stores import ONCE_ONLY, Call, decode, encode, has_store, store_proxy
from sluicegate.durable.temporal.trace_context import continue_caller, inject
from sluicegate.durable.temporal.vectors import durable_memory
from sluicegate.durable.temporal.workflow_model import (
    DurableChain,
    Outbox,
    Settings,
    activity_models,
    load_stream_states,
    stream_states,
)
from sluicegate.errors import ConfigurationError, ToolError
from sluicegate.ids import use_id_source
from sluicegate.processors.base import processor_id
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.storage.suspended_runs import InMemorySuspendedRunStore
from sluicegate.stream.chunk import Chunk
from sluicegate.tools import Tool, ToolContext

if TYPE_CHECKING:
    from sluicegate.agent import Agent
    from sluicegate.agent.results import StepResult
    from sluicegate.agent.run import AgentRun

_START_OPTIONS = {
    "maxSteps": "max_steps",
    "requireToolApproval": "require_tool_approval",
    "toolChoice": "tool_choice",
    "maxProcessorRetries": "max_processor_retries",
}
"""The run options a start carries (`TemporalRuns.start`), as the agent's call takes them."""

_AGENTS: dict[str, Agent[Any]] = {}
"""The agents this worker runs (set by `worker.install`)."""


def install(agents: dict[str, Agent[Any]]) -> None:
    """The agents workflows on this worker may run."""
    _AGENTS.update(agents)
    workflow_spans.install()


class _Tail:
    """Whether a tool call of the step streams its data live now. The run log is one sequence:
    one activity at a time writes at its end, so of calls running at once the first streams and
    the others hand their data chunks back with their results (published after it)."""

    busy = False


_TAILS: weakref.WeakKeyDictionary[Outbox, _Tail] = weakref.WeakKeyDictionary()


class ActivityTools:
    """How a run of this workflow runs its tools (the run's `ToolRunner` port): the agent's own
    tools are validated here (a bad call costs no activity) and run by the tool activity (which
    publishes their data chunks as the tool writes them), a suspension handed back to the loop;
    the tools a run adds (its memory's) run here, as in one process."""

    def __init__(self, agent: Agent[Any], durable: _DurableRun) -> None:
        self._activities = {
            id(tool): _activity_execute(agent, name, durable) for name, tool in agent.tools.items()
        }
        self._held = list(agent.tools.values())  # the ids above name these tools while they are held

    def validate(self, tool: Tool, args: Any) -> Any:
        checked_args = tool.validate(args)
        # The activity validates again, with the worker's tool: it gets the arguments as given.
        return args if id(tool) in self._activities else checked_args

    async def execute(self, tool: Tool, args: Any, context: ToolContext) -> Any:
        activity_call = self._activities.get(id(tool))
        if activity_call is None:
            return await tool.execute(args, context)
        return await activity_call(args, context)


def _activity_execute(
    agent: Agent[Any], name: str, durable: _DurableRun
) -> Callable[[Any, ToolContext], Awaitable[Any]]:
    """The call of the agent's tool `name` as the tool activity."""

    async def run_activity(call: dict[str, Any], carry: dict[str, Any]) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await durable.outbox.landing(
                carry,
                workflow.execute_activity(
                    names.tool_activity(agent.id, name),
                    encoded(f"the call of tool {name!r} ({call['toolCallId']})", call),
                    start_to_close_timeout=durable.settings.tool_timeout,
                    heartbeat_timeout=durable.settings.heartbeat,
                    retry_policy=durable.settings.tool_retry,
                ),
            )
        except ActivityError as exc:
            if "offset" in call:
                assert durable.run is not None
                # Its attempts may have published data chunks: continue after them (the
                # chunks it carried are in the log by now, written by `landing` if need be).
                await durable.outbox.resync(durable.run)
            raise from_activity_error(exc) from None
        return result

    reads_context = agent.tools[name].reads_context

    async def execute(args: Any, context: ToolContext) -> Any:
        run = durable.run
        assert run is not None

        def make_call(carry: dict[str, Any], live: bool) -> dict[str, Any]:
            body: dict[str, Any] = {
                "runId": run.run_id,
                "toolCallId": context.tool_call_id,
                "carry": durable.outbox.sent(carry),
                "idempotencyKey": context.idempotency_key,
                "args": args,
                "resumeData": context.resume_data,
                "suspendedWith": context.suspended_with,
                "requestContext": json_context(context.request_context),
                "messages": [m.to_dict() if hasattr(m, "to_dict") else m for m in context.messages]
                if reads_context
                else [],
            }
            if live and run.pipeline is not None and run.runner.has_data_part_processors:
                # The live call's data chunks go through the stream processors that opted in to
                # data parts before they are published: their state travels there and back.
                body["states"] = stream_states(run)
                body["messageList"] = run.message_list.to_dict()
            return inject(body)  # the tool's `execute_tool` span is the current one here

        outbox = durable.outbox
        tail = _TAILS.setdefault(outbox, _Tail())
        live = not tail.busy
        if live:
            tail.busy = True
            try:
                # Holding the outbox's lock: nothing else writes at the offsets the tool streams
                # to; it carries the workflow's pending chunks and streams right after them.
                async with outbox.lock:
                    carry = outbox.carry()
                    call = make_call(carry, live=True)
                    call["offset"] = carry["end"]
                    result = await run_activity(call, carry)
                    outbox.offset = result["offset"]
                    if "states" in result:
                        load_stream_states(run, result["states"])
            finally:
                tail.busy = False
        else:
            # It runs while the live call streams at the log's end: it carries nothing and
            # hands its data chunks back with its result, which pass through the stream
            # processors here once the live call is done with their state.
            empty = {"offset": outbox.offset, "chunks": [], "end": outbox.offset}
            result = await run_activity(make_call(empty, live=False), empty)
            await workflow.wait_condition(lambda: not tail.busy)
        # What it spent (a sub-agent's model calls), charged to this run's cost guards, once:
        # the result is recorded in the run's history, whatever the tool did next.
        await spend.charge(context.request_context, result.get("spent"))
        writer = context.writer
        for data in result.get("data", []):
            chunk = Chunk.from_dict(data)
            if live:
                # Already processed and in the log: handed to the loop as is, not written again.
                outbox.streamed[id(chunk)] = chunk
                run.processed_elsewhere[id(chunk)] = chunk
                emitted = writer.emit(chunk)
                if inspect.isawaitable(emitted):
                    await emitted
            else:
                custom = {"type": chunk.type, "data": chunk.data, "from": chunk.from_}
                await writer.custom({**custom, "transient": True} if chunk.is_transient else custom)
        if result.get("suspended"):
            await context.suspend(result.get("suspendPayload"))
            return None
        if "error" in result:
            raise ToolError(result["error"])
        return result.get("result")

    return execute


def _checked_function(agent_id: str, array: str, function: Any) -> Any:
    """A processor array given as a function, as the workflow calls it: what it returns is
    checked (`checks.check_returned`) before the run uses it."""

    async def resolve(request_context: RequestContext) -> Any:
        processors = function(request_context)
        if inspect.isawaitable(processors):
            processors = await processors
        try:
            for processor in processors or ():
                needs = has_store(processor) or judges_in_workflow(processor)
                check_returned(agent_id, array, processor, needs_activities=needs)
        except ConfigurationError as exc:
            # The run fails, naming why; any other exception would retry the workflow task forever.
            raise ApplicationError(str(exc), type="ConfigurationError", non_retryable=True) from None
        return processors

    return resolve


class _DurableRun:
    """The agent as this workflow runs it: a copy whose model and tools are activities."""

    def __init__(self, agent: Agent[Any], run_id: str, settings: Settings) -> None:
        self.settings = settings
        self.outbox = Outbox(agent.id, run_id)
        self.models = activity_models(agent, self.outbox, settings)
        self.run: AgentRun | None = None
        self.output: RawValue | None = None
        """The run's output when it last stopped (ended, or suspended): `names.OUTPUT`."""
        self.tools = ActivityTools(agent, self)
        changes: dict[str, Any] = self._wired_processors(agent)
        if agent.memory is not None:
            changes["memory"] = durable_memory(agent.memory, agent.id, self._storage, self._judge_options())
        self.agent = agent.copy_with(**changes, suspended_run_store=InMemorySuspendedRunStore(), run_log=None)

    def _storage(self, locator: list[str]) -> Call:
        agent_id = self.outbox.agent_id

        async def call(method: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
            payload = checked(
                f"the arguments of storage call {method!r}",
                {"locator": locator, "method": method, "args": encode(args), "kwargs": encode(kwargs)},
            )
            try:
                if method in ONCE_ONLY:
                    # Its answer is recorded as soon as it returns: a worker dying later in
                    # the workflow task does not run it again.
                    answer = await workflow.execute_activity(
                        names.storage_activity(agent_id),
                        payload,
                        start_to_close_timeout=self.settings.storage_timeout,
                        retry_policy=self.settings.storage_retry,
                    )
                else:
                    # A local activity: short, and its answer costs no round trip through the
                    # server; a retried workflow task runs it again, which these calls allow.
                    answer = await workflow.execute_local_activity(
                        names.storage_activity(agent_id),
                        payload,
                        start_to_close_timeout=self.settings.storage_timeout,
                        retry_policy=self.settings.storage_retry,
                    )
            except ActivityError as exc:
                raise from_activity_error(exc) from None
            return decode(answer)

        return call

    def _judge_options(self) -> ActivityOptions:
        """Judge and embedding calls are scheduled like model calls (timeouts, retries)."""
        settings = self.settings
        return ActivityOptions(settings.model_timeout, settings.heartbeat, settings.model_retry)

    def _wired_processors(self, agent: Agent[Any]) -> dict[str, Any]:
        """The agent's processor arrays as the workflow runs them: their stores and judges are
        activities. A processor listed twice (input and output) stays one object."""
        copies: dict[int, Any] = {}
        arrays: dict[str, Any] = {}
        for array in ("input_processors", "output_processors", "error_processors"):
            processors = getattr(agent, array)
            if callable(processors) and not isinstance(processors, (list, tuple)):
                arrays[array] = _checked_function(agent.id, array, processors)
                continue
            if not isinstance(processors, (list, tuple)):
                continue
            wired = []
            for processor in processors:
                if id(processor) not in copies:
                    proxied = self._with_store_proxy(processor)
                    copies[id(processor)] = judged_processor(proxied, agent.id, array, self._judge_options())
                wired.append(copies[id(processor)])
            arrays[array] = wired
        return arrays

    def _with_store_proxy(self, processor: Any) -> Any:
        """A processor keeping a store, as a copy whose store's calls are activities (its
        `with_store`; `checks.check_processor` refused one without it at the worker's start)."""
        if not has_store(processor):
            return processor
        stand_in = store_proxy(processor.store, self._storage(["processor", processor_id(processor)]))
        return processor.with_store(stand_in)

    def chain(self) -> DurableChain:
        """How a run of this workflow calls its model (the run's `ModelCaller` port): the model
        activities without client retries, whose activity runs the stream processors on the
        model's chunks (the loop runs them on the chunks the workflow makes, as in one process)."""
        return DurableChain(self.models, self.outbox)

    def bind(self, run: AgentRun) -> AgentRun:
        """The run built with `chain()`, wired to the workflow: its activity models read it, and
        it has no log layer (the outbox is it)."""
        run.run_log = None
        for model in self.models:
            model.run = run
        self.run = run
        return run

    async def drive(self, run: AgentRun) -> None:
        """The run's chunks into the log, its model's own chunks (already published) skipped."""
        outbox = self.outbox
        streamed = outbox.streamed
        events = run.events()
        try:
            async for chunk in events:
                if streamed.get(id(chunk)) is chunk:
                    del streamed[id(chunk)]
                    continue
                outbox.pending.append(chunk)
        finally:
            # Closed here, not by the GC, if the run is evicted (cancelled); a workflow dropped
            # while the loop awaits (its coroutine closed by the GC) leaves the loop mid-await,
            # where it cannot be closed from here: the GC closes it too.
            if not getattr(events, "ag_running", False):
                await events.aclose()
        streamed.clear()
        # Recorded before the log closes: a reader that saw the close finds the output it ended with.
        self.output = _result(run)
        status = "suspended" if run.finish_reason == "suspended" else "error" if run.error else "finished"
        await outbox.flush(close=status)


def _owner(run: AgentRun) -> dict[str, Any]:
    """The options of the run's resumption: its owner's request context, and no processor
    timeout. In workflow code a hook's timeout would be a Temporal timer, recorded in history
    when the hook awaits an activity; whether it is depends on timing, which a replay on
    another worker must not. A hook in the workflow waits only on activities, which have
    their own timeouts."""
    resource = run.message_list.resource_id
    context = RequestContext({RESOURCE_ID_KEY: resource} if resource is not None else {})
    return {"request_context": context, "processor_timeout": None}


def _result(run: AgentRun) -> RawValue:
    """What `generate` would return for the run (JSON, encoded once): its result when it ends,
    its output so far while it waits for a decision (`names.OUTPUT`). A step's tool results are
    in `steps` only (`generate`'s `tool_results` are those of its steps but retried ones): the
    result is one payload, under Temporal's size limit, and they are in `messages` already."""
    suspended = run.suspend_payload()
    return encoded(
        "the run's result",
        {
            "runId": run.run_id,
            "text": run.final_text(),
            # A stream's `text` (ModelOutput.text): what this stream showed, a tripwire's run or
            # the step a suspension interrupted included, from the resumption on.
            "streamText": run.stream_text(),
            "finishReason": run.finish_reason,
            "usage": run.usage.to_dict() if hasattr(run.usage, "to_dict") else vars(run.usage),
            "tripwire": None if run.tripwire is None else run.tripwire.to_dict(),
            "error": None if run.error is None else str(run.error),
            "messages": [m.to_dict() for m in run.message_list.get.all.db()],
            "toolCalls": [c.to_dict() for c in run.all_tool_calls()],
            "steps": [_step(step) for step in run.steps],
            "suspendPayload": None if suspended is None else suspended.to_dict(),
        },
    )


def _step(step: StepResult) -> dict[str, Any]:
    """One step of the run as `generate`'s `steps` reports it (JSON)."""
    return {
        "stepNumber": step.step_number,
        "text": step.text,
        "finishReason": step.finish_reason,
        "toolCalls": [c.to_dict() for c in step.tool_calls],
        "toolResults": [c.to_dict() for c in step.tool_results],
        "usage": step.usage.to_dict() if hasattr(step.usage, "to_dict") else vars(step.usage),
        "model": step.model,
    }


@workflow.defn(name=names.WORKFLOW, sandboxed=False)
class AgentWorkflow:
    """One agent run (see the module docstring). Input: `runs.start_input`."""

    def __init__(self) -> None:
        self._durable: _DurableRun | None = None
        self._pending: dict[str, Any] | None = None
        self._waiting: PendingCall | None = None
        self._decision: tuple[str, str, Any] | None = None
        self._decided = 0

    @workflow.run
    async def run(self, start: dict[str, Any]) -> RawValue:
        agent = _AGENTS.get(start["agentId"])
        if agent is None:
            raise ApplicationError(f"no agent {start['agentId']!r} on this worker", non_retryable=True)
        use_id_source(workflow.uuid4)  # this workflow's context only: ids replay identically
        use_time_source(workflow.time_ns)  # and times: parts are stamped with the task's time
        run_id = workflow.info().workflow_id
        durable = self._durable = _DurableRun(agent, run_id, Settings(start.get("settings") or {}))
        continue_caller(start)
        options: dict[str, Any] = {
            "request_context": RequestContext(start.get("requestContext") or {}),
            "processor_timeout": None,  # see _owner
        }
        if start.get("memory") is not None:
            options["memory"] = start["memory"]
        for key, option in _START_OPTIONS.items():
            if start.get(key) is not None:
                options[option] = start[key]
        run = durable.bind(
            await durable.agent.prepare_run(
                start["messages"], options, run_id=run_id, models=durable.chain(), tool_runner=durable.tools
            )
        )
        await durable.outbox.open(run, start.get(names.FORMAT))
        while True:
            await durable.drive(run)
            held = run.state.held
            if run.finish_reason != "suspended" or held is None or not held.queue:
                assert durable.output is not None
                return durable.output
            waiting = self._waiting = held.queue[0]
            self._pending = {
                "toolCallId": waiting.tool_call_id,
                "toolName": waiting.tool_name,
                "kind": waiting.kind,
                "args": waiting.args,
                "resourceId": run.message_list.resource_id,
            }
            await workflow.wait_condition(lambda: self._decision is not None)
            assert self._decision is not None
            action, tool_call_id, value = self._decision
            self._decision, self._pending, self._waiting = None, None, None
            run = await resumed_run(
                durable.agent,
                action,
                run_id=run_id,
                tool_call_id=tool_call_id,
                # The workflow decides for the run's owner: the caller was checked by the update.
                options=_owner(run),
                reason=value if action == "decline" else None,
                resume_data=value if action == "resume" else None,
                models=durable.chain(),
                tool_runner=durable.tools,
            )
            durable.bind(run)
            await durable.outbox.resync(run)

    @workflow.query(name=names.PENDING)
    def pending_tool_call(self) -> dict[str, Any] | None:
        """The call the run waits on, or None."""
        return self._pending

    @workflow.query(name=names.OUTPUT)
    def output(self) -> RawValue | None:
        """The run's output when it last stopped: its result once it ended, what it had produced
        when it suspended while it waits (None before it first stops)."""
        return None if self._durable is None else self._durable.output

    def _check(self, action: Action, tool_call_id: str | None, value: Any = None) -> None:
        """Refuse a decision before it is accepted (`decisions.decide`, against the call the
        run waits on), with the error type `TemporalRuns` turns back into a typed error."""
        if self._waiting is None or self._decision is not None:
            raise ApplicationError("the run is not waiting for a decision", type="NotWaiting")
        assert self._durable is not None
        tool = self._durable.agent.tools.get(self._waiting.tool_name) if action == "resume" else None
        try:
            decide(
                action,
                self._waiting,
                tool_call_id=tool_call_id,
                reason=value if action == "decline" else None,
                resume_data=value if action == "resume" else None,
                tool=tool,
            )
        except StaleToolCallError as exc:
            raise ApplicationError(str(exc), type="StaleToolCall") from None
        except WrongDecisionError as exc:
            raise ApplicationError(str(exc), type="WrongDecision") from None
        except Exception as exc:
            raise ApplicationError(str(exc), type="InvalidInput") from None

    def _decide(self, action: str, tool_call_id: str | None, value: Any) -> dict[str, Any]:
        assert self._pending is not None
        self._decision = (action, tool_call_id or self._pending["toolCallId"], value)
        assert self._durable is not None
        return {"runId": workflow.info().workflow_id, "offset": self._durable.outbox.offset}

    @workflow.update(name=names.APPROVE)
    def approve(self, tool_call_id: str | None) -> dict[str, Any]:
        return self._decide("approve", tool_call_id, None)

    @approve.validator
    def _approve_valid(self, tool_call_id: str | None) -> None:
        self._check("approve", tool_call_id)

    @workflow.update(name=names.DECLINE)
    def decline(self, tool_call_id: str | None, reason: str | None) -> dict[str, Any]:
        return self._decide("decline", tool_call_id, reason)

    @decline.validator
    def _decline_valid(self, tool_call_id: str | None, reason: str | None) -> None:
        self._check("decline", tool_call_id, reason)

    @workflow.update(name=names.RESUME)
    def resume(self, tool_call_id: str | None, resume_data: Any) -> dict[str, Any]:
        return self._decide("resume", tool_call_id, resume_data)

    @resume.validator
    def _resume_valid(self, tool_call_id: str | None, resume_data: Any) -> None:
        self._check("resume", tool_call_id, resume_data)
