"""A run stopped for a human, as one JSON snapshot, and back.

A step whose tool calls wait on a person (an approval, a tool that called `suspend()`) becomes a
`HeldStep`: the step's record, the results of the calls that already finished (held back, as
Mastra does, until the whole step is decided) and the undecided calls in call order. Mastra asks
about one call at a time, so only the first of `queue` is pending in the store; the others wait
their turn in the snapshot.

What the snapshot keeps is `RunState`'s stored part (see its docstring), the `MessageList`, the
held step, the runner's retry count, the JSON-encodable part of the request context, and, for a
processor that asks for it with `suspend_state(state) -> dict`, that processor's `state`. As in
Mastra, other processors start the resumed stream with an empty `state` (each stream has its
own); a processor that must carry something over a suspension (a per-run budget) says what.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, TypedDict

from sluicegate.agent.held_step import HeldStep, json_value
from sluicegate.agent.results import StepResult, Tripwire
from sluicegate.budget import OffersUsageSink
from sluicegate.errors import ConfigurationError
from sluicegate.messages import MessageList
from sluicegate.processors.base import StateExport, optional_hook, processor_id
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.usage import Usage

if TYPE_CHECKING:
    from sluicegate.agent.run_core import RunCore

log = logging.getLogger("sluicegate.agent")

SNAPSHOT_FORMAT = 1


class UnserializableStateError(ConfigurationError):
    """What a processor's `suspend_state` returned is not JSON: the run cannot be stored."""

    def __init__(self, processor: str, problem: str) -> None:
        super().__init__(
            f"processor {processor!r}: suspend_state() must return a JSON object (str keys; str, "
            f"number, bool, None, list and dict values) so the suspended run can be stored: {problem}"
        )
        self.processor = processor


# ---------------------------------------------------------------- to JSON


class RunSnapshot(TypedDict):
    """A run between two steps as JSON (what `take_snapshot` makes and `restore_state` reads
    back): the conversation, the progress of `RunState` that outlives a step, the runner's
    retry count, the processors' exported `state`, the JSON part of the request context, and the
    held step when the run waits on a person (None at any other step boundary).

    Not in it, by design: what describes a run that has ended (`finish_reason`, `tripwire`,
    `error`, `object`, `aborted`, `steps_exhausted`: no next step reads them), what lives only
    while a step runs (`current`, `input_gate`, `finishing`), and the resuming call's decision
    (`approved`, `resume_data`, `decided`: carried by its `Decision`). A round trip at every
    step boundary of every conformance scenario is tested (tests/agent/test_run_snapshot.py)."""

    format: int
    messages: dict[str, Any]
    thread_id: str | None
    resource_id: str | None
    steps: list[dict[str, Any]]
    accepted_text: list[str]
    usage: dict[str, Any]
    system_base: list[list[Any]]
    feedback: list[list[Any]]
    step_number: int
    completed: int
    output_attempts: int
    retry_count: int
    held: dict[str, Any] | None
    processor_state: dict[str, Any]
    request_context: dict[str, Any]
    require_tool_approval: bool


def take_snapshot(run: RunCore, held: HeldStep | None, require_approval: bool) -> RunSnapshot:
    """The run as JSON, for the store (`held`: the step waiting on people), or at any step
    boundary (`held=None`). Raises `UnserializableStateError` naming a processor."""
    state = run.state
    return {
        "format": SNAPSHOT_FORMAT,
        "messages": json_value(run.message_list.to_dict()),
        "thread_id": run.message_list.thread_id,
        "resource_id": run.message_list.resource_id,
        "steps": [_step_to_dict(s) for s in state.steps],
        "accepted_text": list(state.accepted_text),
        "usage": _usage(state.usage),
        "system_base": [[m, t] for m, t in state.system_base],
        "feedback": [[m, t] for m, t in state.feedback],
        "step_number": state.step_number,
        "completed": state.completed,
        "output_attempts": state.output_attempts,
        "retry_count": run.runner.retry_count,
        "held": None if held is None else _held_to_dict(held),
        "processor_state": _processor_states(run),
        "request_context": json_context(run.request_context),
        "require_tool_approval": require_approval,
    }


def _held_to_dict(held: HeldStep) -> dict[str, Any]:
    return {
        "step_number": held.step_number,
        "tool_calls": [_chunk(c) for c in held.tool_calls],
        "finish_reason": held.finish_reason,
        "usage": _usage(held.usage),
        "text": held.text,
        "reasoning_text": held.reasoning_text,
        "warnings": json_value(held.warnings),
        "response": json_value(held.response),
        "model": held.model,
        "results": [_chunk(c) for c in held.results.values()],
        "queue": [c.to_dict() for c in held.queue],
    }


def _processor_states(run: RunCore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for processor in run.processors:
        export: StateExport | None = optional_hook(processor, "suspend_state")
        if export is None:
            continue
        pid = processor_id(processor)
        value = export(dict(run.runner.state_for(pid)))
        if not isinstance(value, dict):
            raise UnserializableStateError(pid, f"got {type(value).__name__}")
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UnserializableStateError(pid, str(exc)) from None
        if json.loads(text) != value:
            raise UnserializableStateError(pid, "it does not read back equal (tuples, non-str keys?)")
        out[pid] = value
    return out


# Values that are JSON as they are (not `int`: one past `sys.get_int_max_str_digits()` is not).
_JSON_SCALARS = frozenset((str, bool, type(None)))


def json_context(context: RequestContext) -> dict[str, Any]:
    """The entries that are JSON; the others (clients, callables) cannot leave the process."""
    out: dict[str, Any] = {}
    for key, value in context.to_dict().items():
        if type(value) in _JSON_SCALARS:  # the common entries (ids, names, flags) need no round trip
            out[key] = value
            continue
        try:
            if json.loads(json.dumps(value, allow_nan=False)) == value:
                out[key] = value
                continue
        except (TypeError, ValueError):
            pass
        log.debug("request context entry %r is not JSON: not kept for the resumed run", key)
    return out


def _chunk(chunk: Chunk) -> dict[str, Any]:
    return json_value(chunk.to_dict())  # type: ignore[no-any-return]


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
        **({"reasoningTokens": usage.reasoning_tokens} if usage.reasoning_tokens is not None else {}),
        **({"cachedInputTokens": usage.cached_input_tokens} if usage.cached_input_tokens is not None else {}),
    }


def _step_to_dict(step: StepResult) -> dict[str, Any]:
    return {
        "step_number": step.step_number,
        "text": step.text,
        "reasoning_text": step.reasoning_text,
        "tool_calls": [_chunk(c) for c in step.tool_calls],
        "tool_results": [_chunk(c) for c in step.tool_results],
        "tool_errors": [_chunk(c) for c in step.tool_errors],
        "finish_reason": step.finish_reason,
        "usage": _usage(step.usage),
        "warnings": json_value(step.warnings),
        "response": json_value(step.response),
        "from_cache": step.from_cache,
        "model": step.model,
        "tripwire": None if step.tripwire is None else json_value(step.tripwire.to_dict()),
    }


# ---------------------------------------------------------------- from JSON


def restore_messages(snapshot: RunSnapshot | dict[str, Any]) -> MessageList:
    message_list = MessageList.from_dict(snapshot["messages"])
    message_list.thread_id = snapshot.get("thread_id")
    message_list.resource_id = snapshot.get("resource_id")
    return message_list


def input_messages(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """The user messages the held run was started with (stored shape): they reach the thread's
    storage only when the run ends, so a view of a waiting run shows them from here."""
    stored = snapshot.get("messages")
    entries = stored.get("messages") if isinstance(stored, dict) else None
    if not isinstance(entries, list):
        return []
    return [
        {k: v for k, v in entry.items() if k != "source"}
        for entry in entries
        if isinstance(entry, dict) and entry.get("source") == "input" and entry.get("role") == "user"
    ]


def restore_context(snapshot: dict[str, Any], caller: RequestContext | None) -> RequestContext:
    """The stored context, then the resuming caller's values over it (not the owner's ids)."""
    from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY

    values = dict(snapshot.get("request_context") or {})
    if caller is not None:
        for key, value in caller.to_dict().items():
            if key not in (RESOURCE_ID_KEY, THREAD_ID_KEY):
                values[key] = value
    return RequestContext(values)


def restore_state(run: RunCore, snapshot: RunSnapshot | dict[str, Any]) -> HeldStep | None:
    """Put the stored progress into the fresh run (built with the snapshot's messages, see
    `restore_messages`); the held step to continue from, None for a run between steps."""
    state = run.state
    state.steps = [_step_from_dict(s) for s in snapshot.get("steps", [])]
    accepted = snapshot.get("accepted_text")
    if accepted is None:  # stored before it was kept: each accepted step's text, in order
        accepted = [s.text for s in state.steps if s.finish_reason != "retry"]
    state.accepted_text = [str(text) for text in accepted]
    state.usage = Usage.from_v2(snapshot.get("usage"))
    state.system_base = [(dict(m), t) for m, t in snapshot.get("system_base", [])]
    state.feedback = [(dict(m), t) for m, t in snapshot.get("feedback", [])]
    state.step_number = snapshot.get("step_number", 0)
    state.completed = snapshot.get("completed", 0)
    state.output_attempts = snapshot.get("output_attempts", 0)
    run.runner.retry_count = snapshot.get("retry_count", 0)
    for pid, saved in (snapshot.get("processor_state") or {}).items():
        run.runner.state_for(pid).update(saved)
    for processor in run.processors:
        if isinstance(processor, OffersUsageSink):
            # Before the held calls run: what a sub-agent among them spends is charged.
            processor.offer_usage_sink(run.runner.state_for(processor_id(processor)), run.request_context)
    from sluicegate.storage.suspended_runs import PendingToolCall

    held = snapshot.get("held")
    if held is None:
        return None
    return HeldStep(
        step_number=held["step_number"],
        tool_calls=[Chunk.from_dict(c) for c in held["tool_calls"]],
        finish_reason=held.get("finish_reason"),
        usage=Usage.from_v2(held.get("usage")),
        text=held.get("text", ""),
        reasoning_text=held.get("reasoning_text", ""),
        warnings=list(held.get("warnings") or []),
        response=dict(held.get("response") or {}),
        model=str(held.get("model") or ""),
        results={c["payload"]["toolCallId"]: Chunk.from_dict(c) for c in held.get("results", [])},
        queue=[PendingToolCall.from_dict(c) for c in held.get("queue", [])],
        message_list=run.message_list,
    )


def _step_from_dict(data: dict[str, Any]) -> StepResult:
    return StepResult(
        step_number=data["step_number"],
        text=data.get("text", ""),
        reasoning_text=data.get("reasoning_text", ""),
        tool_calls=[Chunk.from_dict(c) for c in data.get("tool_calls", [])],
        tool_results=[Chunk.from_dict(c) for c in data.get("tool_results", [])],
        tool_errors=[Chunk.from_dict(c) for c in data.get("tool_errors", [])],
        finish_reason=data.get("finish_reason"),
        usage=Usage.from_v2(data.get("usage")),
        warnings=list(data.get("warnings") or []),
        response=dict(data.get("response") or {}),
        from_cache=bool(data.get("from_cache")),
        model=str(data.get("model") or ""),
        tripwire=_tripwire_from_dict(data.get("tripwire")),
    )


def _tripwire_from_dict(data: Any) -> Tripwire | None:
    if not isinstance(data, dict):
        return None
    return Tripwire(
        str(data.get("reason", "")),
        bool(data.get("retry")),
        data.get("metadata"),
        data.get("processorId", data.get("processor_id")),
    )
