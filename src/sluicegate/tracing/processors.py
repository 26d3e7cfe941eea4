"""Processor spans for the hooks called once per event (everything but `output_stream`).

`instrument()` wraps each resolved hook of a run's `ProcessorRunner` once, so the runner keeps
one code path. A wrapped hook runs inside `processor <id> <phase>` with that span attached as
the current context and as `args.tracing_context`, and ends it with its outcome:

- `abort`: it raised `TripWire` without `retry` (reason and retry flag recorded);
- `retry`: it raised `TripWire(retry=True)`, or (`api_error`) asked for a retry;
- `error`: it raised anything else;
- `modified`: it changed what it was given — the message list (in place or through the value
  it returned), the step's settings, the prompt, a replacement response or the tool result;
- `pass`: otherwise.

Deciding `modified` compares the message list (or prompt) before and after the hook, which
costs one serialisation per hook call while tracing is on.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from sluicegate.errors import ToolCallRefused, TripWire
from sluicegate.guardrails.detector import DetectorModel
from sluicegate.messages import MessageList
from sluicegate.processors.args import (
    ProcessAPIErrorResult,
    ProcessInputStepResult,
    ProcessLLMRequestResult,
    step_result_fields,
)
from sluicegate.processors.offload import offload_sync_hook
from sluicegate.tracing import attributes as attr
from sluicegate.tracing.findings import RedactionSink, collect, release
from sluicegate.tracing.metrics import Instruments
from sluicegate.tracing.record import TracingContext, set_error, to_json
from sluicegate.tracing.stream import add_redactions

if TYPE_CHECKING:
    from sluicegate.processors.runner import ProcessorRunner


class RunTrace(Protocol):
    """What hook spans need of the run's trace (`sluicegate.tracing.spans.RunTrace`)."""

    metrics: Instruments
    context: otel_context.Context
    trace_id: str
    step_number: int
    capture_changes: bool

    def start_span(
        self,
        name: str,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.INTERNAL,
        parent: otel_context.Context | None = None,
    ) -> Span: ...

    def tool_context(self) -> otel_context.Context: ...


_MESSAGE_PHASES = frozenset(("input", "input_step", "output_step", "output_result"))
_EMPTY_IS_UNCHANGED = frozenset(("output_step", "output_result"))


def instrument(run_trace: RunTrace, runner: ProcessorRunner) -> None:
    """Wrap every non-stream hook of `runner` in its span."""
    for entry in runner.hook_entries():
        detector = getattr(entry.processor, "detector", None)
        if isinstance(detector, DetectorModel):
            detector.processor_id = entry.pid
        if entry.hook == "process_output_stream":
            continue  # counted by the runner's per-chunk loop, see sluicegate.tracing.stream
        entry.wrap(_span_wrapper(run_trace, entry.pid, attr.PHASES.get(entry.hook, entry.hook)))


def _span_wrapper(
    run_trace: RunTrace, pid: str, phase: str
) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    return lambda fn: _traced_hook(run_trace, fn, pid, phase)


def _traced_hook(run_trace: RunTrace, fn: Callable[[Any], Any], pid: str, phase: str) -> Callable[[Any], Any]:
    name = f"{attr.PROCESSOR} {pid} {phase}"
    metrics = run_trace.metrics
    metric_attributes = {attr.PROCESSOR_ID: pid, attr.PROCESSOR_PHASE: phase}
    is_async = inspect.iscoroutinefunction(fn)

    async def traced(args: Any) -> Any:
        step_number = getattr(args, "step_number", None)
        if isinstance(step_number, int) and phase != "tool_result":
            run_trace.step_number = step_number
        elif not isinstance(step_number, int):
            step_number = run_trace.step_number
        attributes: dict[str, Any] = {
            attr.PROCESSOR_ID: pid,
            attr.PROCESSOR_PHASE: phase,
            attr.STEP_NUMBER: step_number,
        }
        parent = run_trace.context
        if phase == "tool_result":
            attributes[attr.GEN_AI_TOOL_NAME] = str(getattr(args, "tool_name", ""))
            attributes[attr.GEN_AI_TOOL_CALL_ID] = str(getattr(args, "tool_call_id", ""))
            parent = run_trace.tool_context()
        span = run_trace.start_span(name, attributes, parent=parent)
        try:
            args.tracing_context = TracingContext(span, run_trace.trace_id)
        except AttributeError:
            pass
        before = _snapshot(phase, args)
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        sink = RedactionSink()
        collecting = collect(sink)
        started = time.perf_counter_ns()
        outcome = attr.PASS
        try:
            # A sync hook is offloaded as the untraced runner would (large input: a worker thread).
            result = fn(args) if is_async else await offload_sync_hook(fn, args)
            if inspect.isawaitable(result):
                result = await result
        except TripWire as tripwire:
            outcome = attr.RETRY if tripwire.retry else attr.ABORT
            span.set_attribute(attr.TRIPWIRE_REASON, str(tripwire.reason))
            span.set_attribute(attr.TRIPWIRE_RETRY, bool(tripwire.retry))
            metrics.tripwires.add(1, {**metric_attributes, attr.TRIPWIRE_RETRY: bool(tripwire.retry)})
            if tripwire.retry:
                metrics.retries.add(1, metric_attributes)
            raise
        except ToolCallRefused as refusal:  # one call refused, the run goes on: not a failure
            outcome = attr.REFUSED
            span.set_attribute(attr.TOOL_REFUSAL_REASON, str(refusal))
            raise
        except BaseException as exc:
            outcome = attr.ERROR
            set_error(span, exc)
            raise
        else:
            outcome = _outcome(phase, args, result, before, span)
            if outcome == attr.RETRY:
                metrics.retries.add(1, metric_attributes)
            elif outcome == attr.MODIFIED and run_trace.capture_changes:
                _record_change(span, phase, args, result, before)
            return result
        finally:
            duration_ms = (time.perf_counter_ns() - started) / 1e6
            release(collecting)
            add_redactions(span, sink.counts)
            otel_context.detach(token)
            span.set_attribute(attr.PROCESSOR_OUTCOME, outcome)
            span.set_attribute(attr.HOOK_DURATION_MS, duration_ms)
            metrics.hook_duration.record(duration_ms, metric_attributes)
            span.end()

    return traced


# ---------------------------------------------------------------------- outcomes


def _messages_state(message_list: MessageList | None) -> Any:
    return None if message_list is None else to_json(message_list.to_dict())


def _snapshot(phase: str, args: Any) -> Any:
    if phase == "tool_result":
        return to_json(getattr(args, "result", None))
    if phase in _MESSAGE_PHASES:
        return _messages_state(getattr(args, "message_list", None))
    if phase == "llm_request":
        return to_json(args.prompt)
    return None


def _outcome(phase: str, args: Any, result: Any, before: Any, span: Any) -> str:
    if phase == "api_error":
        if isinstance(result, ProcessAPIErrorResult):
            retry = bool(result.retry)
        else:
            retry = bool(result.get("retry")) if isinstance(result, dict) else False
        error = getattr(args, "error", None)
        if error is not None:
            span.set_attribute(attr.API_ERROR_TYPE, type(error).__name__)
        return attr.RETRY if retry else attr.PASS
    if phase == "llm_request":
        return _llm_request_outcome(args, result, before, span)
    if phase == "llm_response":
        return attr.PASS
    if phase == "tool_call":  # None leaves the tool's arguments as they are
        return attr.PASS if result is None else attr.MODIFIED
    if phase == "tool_result":
        new = getattr(args, "result", None)
        if isinstance(result, dict) and set(result) <= {"result"}:
            new = result.get("result", new)
        elif result is not None and hasattr(result, "result") and not isinstance(result, dict):
            new = result.result
        elif result is not None:
            return _rejected(span)
        return attr.MODIFIED if to_json(new) != before else attr.PASS
    message_list = getattr(args, "message_list", None)
    if result is not None and not isinstance(result, (list, dict, ProcessInputStepResult, MessageList)):
        return _rejected(span)
    if message_list is None:
        return attr.PASS if result is None else attr.MODIFIED
    if _messages_state(message_list) != before:
        return attr.MODIFIED
    return attr.MODIFIED if _returns_change(phase, args, result, message_list) else attr.PASS


def _after(phase: str, args: Any, result: Any) -> Any:
    """What a modifying hook left, as JSON: what the runner applies from its return value,
    else what it changed in place."""
    if phase == "tool_result":
        if isinstance(result, dict) and "result" in result:
            return to_json(result["result"])
        if result is not None and hasattr(result, "result"):
            return to_json(result.result)
        return to_json(getattr(args, "result", None))
    if phase == "llm_request":
        prompt, response = _request_parts(result)
        if response is not None:
            return to_json({"response": response})
        return to_json(prompt if prompt is not None else args.prompt)
    message_list = getattr(args, "message_list", None)
    if isinstance(result, list):
        return _with_system(message_list, [_as_dict(m) for m in result], None)
    if isinstance(result, (ProcessInputStepResult, dict)):
        fields = step_result_fields(result)
        if isinstance(fields, dict) and fields.get("messages") is not None:
            messages = [_as_dict(m) for m in fields["messages"]]
            return _with_system(message_list, messages, fields.get("system_messages"))
    return _messages_state(message_list)


def _with_system(message_list: MessageList | None, messages: list[Any], system: Any) -> Any:
    """Returned messages in the shape of the "before" capture (`MessageList.to_dict`): the
    runner keeps the system messages a hook did not return, so "after" shows them too (else
    the inspector would show every system prompt as deleted)."""
    if message_list is None:
        return to_json(messages)
    if system is None:
        kept = message_list.to_dict()["system"]
    else:
        kept = [{"role": "system", "content": m} if isinstance(m, str) else _as_dict(m) for m in system]
    return to_json({"messages": messages, "system": kept})


def _record_change(span: Any, phase: str, args: Any, result: Any, before: Any) -> None:
    """Content (`capture_changes` only): what the hook was given and what it made of it."""
    after = _after(phase, args, result)
    if before is not None:
        span.set_attribute(attr.CONTENT_BEFORE, before)
    if after is not None:
        span.set_attribute(attr.CONTENT_AFTER, after)


def _rejected(span: Any) -> str:
    """The hook returned something the runner refuses (it then fails the run)."""
    span.set_attribute(attr.ERROR_TYPE, "ProcessorError")
    span.set_status(Status(StatusCode.ERROR, "the hook returned a value the runner rejects"))
    return attr.ERROR


def _request_parts(result: Any) -> tuple[Any, Any]:
    """The prompt and response a `process_llm_request` return value sets (None: unset)."""
    if isinstance(result, ProcessLLMRequestResult):
        return result.prompt, result.response
    if isinstance(result, dict):
        return result.get("prompt"), result.get("response")
    return None, None


def _llm_request_outcome(args: Any, result: Any, before: Any, span: Any) -> str:
    if result is not None and not isinstance(result, (ProcessLLMRequestResult, dict)):
        return _rejected(span)
    prompt, response = _request_parts(result)
    if response is not None:
        span.set_attribute(attr.LLM_REQUEST_RESPONSE, True)
        return attr.MODIFIED
    current = prompt if prompt is not None else args.prompt
    return attr.MODIFIED if to_json(current) != before else attr.PASS


def _returns_change(phase: str, args: Any, result: Any, message_list: MessageList) -> bool:
    """Whether a hook's return value will change the run when the runner applies it."""
    if result is None or result is message_list:
        return False
    if isinstance(result, list):
        if not result and phase in _EMPTY_IS_UNCHANGED:
            return False
        current = [m.to_dict() for m in message_list.get.all.db()]
        return to_json([_as_dict(m) for m in result]) != to_json(current)
    if isinstance(result, (ProcessInputStepResult, dict)):
        result = step_result_fields(result)
    if isinstance(result, dict):
        for key, value in result.items():
            if value is None or value is message_list:
                continue
            if key == "messages":
                current = [m.to_dict() for m in message_list.get.all.db()]
                if to_json([_as_dict(m) for m in value]) != to_json(current):
                    return True
            elif key == "system_messages":
                if to_json(value) != to_json(message_list.get_system_messages()):
                    return True
            elif value != getattr(args, key, None):
                return True
        return False
    return True


def _as_dict(message: Any) -> Any:
    to_dict = getattr(message, "to_dict", None)
    return to_dict() if callable(to_dict) else message
