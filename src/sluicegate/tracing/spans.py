"""`RunTrace`: the spans of one agent run.

Tree (all children of the run span, in time order):

    invoke_agent <agent>
    ├── processor <id> input
    ├── processor <id> input_step          (per step)
    ├── processor <id> llm_request
    ├── chat <model>                       (one model call; GenAI attributes)
    ├── processor <id> output_stream       (one per processor per step, aggregated counters)
    ├── processor <id> output_step
    ├── processor <id> llm_response
    ├── execute_tool <tool>                (tool spans; tool code runs with it as current span)
    ├── processor <id> tool_result
    └── processor <id> output_result

Spans are started with the run span as explicit parent, never by attaching a context inside
the agent's async generator (a context attached there would leak into the consumer between
chunks). Processor hooks and tools run with their own span attached, so spans they create
nest under it.

Content (prompts, completions, tool arguments and results) is recorded only with
`capture_content=True`, and then only what processors let through: the prompt after
`process_llm_request`, the completion after the stream processors.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from sluicegate.stream.chunk import Chunk, tag_run_id
from sluicegate.tracing import attributes as attr
from sluicegate.tracing import state
from sluicegate.tracing.metrics import Instruments, instruments
from sluicegate.tracing.processors import instrument
from sluicegate.tracing.record import TracingContext, set_error, to_json
from sluicegate.tracing.stream import StreamTracker

if TYPE_CHECKING:
    from sluicegate.models.base import CallOptions
    from sluicegate.processors.runner import ProcessorRunner
    from sluicegate.stream.usage import Usage

TRACER_SCOPE = "sluicegate"


class RecordedStep(Protocol):
    """What `end_chat` reads of a step (the agent's `StepRecorder`); the agent layer is above
    this one, so it is named by shape."""

    usage: Usage
    finish_reason: Any
    response: dict[str, Any]

    def current_text(self) -> str: ...


def begin_run(agent_id: str, run_id: str, model: Any) -> tuple[str, str, RunTrace | None]:
    """(run id, trace id, run trace) for a new run.

    With no tracer or meter provider configured this returns `None` for the trace: the run
    then does no tracing work at all. The trace id is then the caller's (a propagated trace
    context) or "". The run id carries `{"traceId": ...}` for the chunks' metadata.
    """
    if not state.enabled():
        current = trace.get_current_span().get_span_context()
        if not current.is_valid:
            return run_id, "", None
        trace_id = trace.format_trace_id(current.trace_id)
        return tag_run_id(run_id, {"traceId": trace_id}), trace_id, None
    run_trace = RunTrace(agent_id, run_id, model)
    metadata = {"traceId": run_trace.trace_id} if run_trace.trace_id else None
    return tag_run_id(run_id, metadata), run_trace.trace_id, run_trace


class RunTrace:
    """The spans and metrics of one run. Built only when a provider is configured."""

    def __init__(self, agent_id: str, run_id: str, model: Any) -> None:
        self.tracer: trace.Tracer = state.tracer_provider().get_tracer(TRACER_SCOPE)
        if state.STATE.adapt_tracer is not None:
            self.tracer = state.STATE.adapt_tracer(self.tracer)
        self.metrics: Instruments = instruments()
        self.capture_content = state.STATE.capture_content
        self.capture_changes = self.capture_content and state.STATE.capture_changes
        self.agent_id = agent_id
        self.run_id = str(run_id)
        self.base: dict[str, Any] = {attr.RUN_ID: self.run_id, attr.AGENT_ID: agent_id}
        self.span = self.tracer.start_span(
            f"{attr.INVOKE_AGENT} {agent_id}",
            kind=SpanKind.INTERNAL,
            attributes={
                **self.base,
                attr.GEN_AI_OPERATION_NAME: attr.INVOKE_AGENT,
                attr.GEN_AI_AGENT_ID: agent_id,
                attr.GEN_AI_AGENT_NAME: agent_id,
                **_model_attributes(model),
            },
        )
        self.context = trace.set_span_in_context(self.span)
        span_context = self.span.get_span_context()
        self.trace_id = trace.format_trace_id(span_context.trace_id) if span_context.is_valid else ""
        self.tracing_context = TracingContext(self.span, self.trace_id)
        self.step_number = 0
        self._chat: Span | None = None
        self._chat_started = 0.0
        self._chat_attributes: dict[str, Any] = {}
        self._chat_replayed = False
        self._ended = False
        self._tool_spans: set[int] = set()
        self.stream = StreamTracker(self)

    # ------------------------------------------------------------------ helpers

    def start_span(
        self,
        name: str,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.INTERNAL,
        parent: otel_context.Context | None = None,
    ) -> Span:
        return self.tracer.start_span(
            name,
            context=self.context if parent is None else parent,
            kind=kind,
            attributes={**self.base, **attributes},
        )

    def tool_context(self) -> otel_context.Context:
        """The current context when it is one of this run's `execute_tool` spans (a
        `tool_result` hook runs inside the tool's task), else the run's."""
        current = trace.get_current_span().get_span_context()
        if current.span_id in self._tool_spans:
            return otel_context.get_current()
        return self.context

    def attach(self, runner: ProcessorRunner) -> None:
        """Instrument the run's processors (called once, right after the runner is built)."""
        runner.tracing_context = self.tracing_context
        runner.stream_counts = self.stream.counts_for
        instrument(self, runner)

    # ------------------------------------------------------------------ model calls

    def begin_step(self, step_number: int, model: Any, options: CallOptions, *, replayed: bool) -> None:
        """A step's model call starts: close the previous step's stream spans, open `chat`."""
        self.stream.flush()
        self.end_chat(None)
        self.step_number = step_number
        attributes: dict[str, Any] = {
            attr.GEN_AI_OPERATION_NAME: attr.CHAT,
            attr.STEP_NUMBER: step_number,
            **_model_attributes(model),
        }
        for name, key in attr.REQUEST_SETTINGS.items():
            value = getattr(options, name, None)
            if value is not None:
                attributes[key] = list(value) if isinstance(value, (list, tuple)) else value
        if replayed:
            attributes[attr.RESPONSE_REPLAYED] = True
        if self.capture_content:
            attributes[attr.GEN_AI_INPUT_MESSAGES] = to_json(options.prompt)
        self._chat_attributes = attributes
        self._chat_replayed = replayed
        self._chat = self.start_span(
            f"{attr.CHAT} {getattr(model, 'model_id', model)}", attributes, kind=SpanKind.CLIENT
        )
        self._chat_started = time.perf_counter()
        self.stream.step_started(step_number)

    @property
    def chat_span(self) -> Span | None:
        """The open `chat` span of the current step (a durable run's model activity nests under it)."""
        return self._chat

    def end_chat(self, step: RecordedStep | None, error: BaseException | None = None) -> None:
        """The model stream ended (or failed): finish reason, usage, latency."""
        span = self._chat
        if span is None:
            return
        self._chat = None
        elapsed = time.perf_counter() - self._chat_started
        metric_attributes = {
            k: v
            for k, v in self._chat_attributes.items()
            if k in (attr.GEN_AI_OPERATION_NAME, attr.GEN_AI_PROVIDER_NAME, attr.GEN_AI_REQUEST_MODEL)
        }
        if step is not None:
            usage = step.usage
            span.set_attribute(attr.GEN_AI_USAGE_INPUT_TOKENS, int(usage.input_tokens or 0))
            span.set_attribute(attr.GEN_AI_USAGE_OUTPUT_TOKENS, int(usage.output_tokens or 0))
            model_id = step.response.get("modelId") or self._chat_attributes.get(attr.GEN_AI_REQUEST_MODEL)
            cost = _cost(model_id, usage)
            if cost is not None and not self._chat_replayed:
                span.set_attribute(attr.USAGE_COST, cost)
            if step.finish_reason is not None and error is None:
                span.set_attribute(attr.GEN_AI_RESPONSE_FINISH_REASONS, [str(step.finish_reason)])
            response_id = step.response.get("id")
            if isinstance(response_id, str):
                span.set_attribute(attr.GEN_AI_RESPONSE_ID, response_id)
            response_model = step.response.get("modelId") or step.response.get("model_id")
            if isinstance(response_model, str):
                span.set_attribute(attr.GEN_AI_RESPONSE_MODEL, response_model)
            if self.capture_content and error is None:
                span.set_attribute(
                    attr.GEN_AI_OUTPUT_MESSAGES,
                    to_json(
                        [
                            {
                                "role": "assistant",
                                "parts": [{"type": "text", "content": step.current_text()}],
                                "finish_reason": step.finish_reason,
                            }
                        ]
                    ),
                )
            if not self._chat_replayed:
                for token_type, count in (("input", usage.input_tokens), ("output", usage.output_tokens)):
                    if count:
                        self.metrics.token_usage.record(
                            int(count), {**metric_attributes, attr.GEN_AI_TOKEN_TYPE: token_type}
                        )
        if error is not None:
            set_error(span, error, content=self.capture_content)
            metric_attributes = {**metric_attributes, attr.ERROR_TYPE: type(error).__name__}
        if not self._chat_replayed:
            self.metrics.operation_duration.record(elapsed, metric_attributes)
        span.end()

    # ------------------------------------------------------------------ tools

    async def tool_call(self, call: Chunk, step_number: int, work: Awaitable[Chunk]) -> Chunk:
        """Run one tool call (`work`) inside an `execute_tool` span, attached as current."""
        payload = call.payload
        name = str(payload.tool_name)
        attributes: dict[str, Any] = {
            attr.GEN_AI_OPERATION_NAME: attr.EXECUTE_TOOL,
            attr.GEN_AI_TOOL_NAME: name,
            attr.GEN_AI_TOOL_CALL_ID: str(payload.tool_call_id),
            attr.GEN_AI_TOOL_TYPE: "function",
            attr.STEP_NUMBER: step_number,
        }
        if self.capture_content:
            attributes[attr.GEN_AI_TOOL_CALL_ARGUMENTS] = to_json(payload.args)
        span = self.start_span(f"{attr.EXECUTE_TOOL} {name}", attributes)
        span_id = span.get_span_context().span_id
        self._tool_spans.add(span_id)
        token = otel_context.attach(trace.set_span_in_context(span, self.context))
        try:
            result = await work
        except BaseException as exc:
            set_error(span, exc, content=self.capture_content)
            raise
        else:
            if result.type == "tool-error":
                set_error(span, result.payload.error, content=self.capture_content)
            elif result.type == "tool-output-denied":
                span.set_attribute(attr.TOOL_REFUSED_BY, str(result.payload.get("processor_id") or ""))
                span.set_attribute(attr.TOOL_REFUSAL_REASON, str(result.payload.get("reason") or ""))
            elif result.type != "tool-result":  # it waits on a person: there is no result yet
                span.set_attribute(attr.TOOL_WAITING, result.type)
            elif self.capture_content:
                span.set_attribute(attr.GEN_AI_TOOL_CALL_RESULT, to_json(result.payload.result))
            return result
        finally:
            otel_context.detach(token)
            self._tool_spans.discard(span_id)
            span.end()

    # ------------------------------------------------------------------ the end

    def end_run(self, run: Any) -> None:
        """Close everything still open and the run span, with the run's outcome."""
        if self._ended:
            return
        self._ended = True
        self.stream.flush()
        self.end_chat(run.state.current, run.error)
        span = self.span
        usage = run.usage
        span.set_attribute(attr.GEN_AI_USAGE_INPUT_TOKENS, int(usage.input_tokens or 0))
        span.set_attribute(attr.GEN_AI_USAGE_OUTPUT_TOKENS, int(usage.output_tokens or 0))
        span.set_attribute(attr.STEPS, len(run.steps))
        span.set_attribute(attr.RETRIES, int(run.runner.retry_count))
        signal = getattr(run.options, "abort_signal", None)
        aborted = bool(getattr(run, "aborted", False)) or (
            run.finish_reason is None and signal is not None and signal.is_set()
        )
        finish_reason = "abort" if aborted else run.finish_reason
        if finish_reason is not None:
            span.set_attribute(attr.FINISH_REASON, str(finish_reason))
        tripwire = run.tripwire
        if tripwire is not None:
            span.set_attribute(attr.TRIPWIRE_REASON, str(tripwire.reason))
            span.set_attribute(attr.TRIPWIRE_RETRY, bool(tripwire.retry))
            if tripwire.processor_id is not None:
                span.set_attribute(attr.TRIPWIRE_PROCESSOR_ID, str(tripwire.processor_id))
        elif run.error is not None:
            set_error(span, run.error, content=self.capture_content)
        elif finish_reason is None:
            span.set_status(Status(StatusCode.ERROR, "the run stopped before it finished"))
            span.set_attribute(attr.ERROR_TYPE, "cancelled")
        span.end()


def _cost(model_id: Any, usage: Usage) -> float | None:
    """US dollars for `usage` at `CostGuardProcessor`'s default prices (the longest model-id
    prefix wins); None for a model without a price."""
    if not isinstance(model_id, str) or not model_id:
        return None
    from sluicegate.processors.builtin.cost_guard import DEFAULT_PRICING

    lowered = model_id.lower()
    for candidate in (lowered, lowered.rsplit("/", 1)[-1]):
        best = max((key for key in DEFAULT_PRICING if candidate.startswith(key)), key=len, default=None)
        if best is not None:
            return round(DEFAULT_PRICING[best].cost(usage), 8)
    return None


def _model_attributes(model: Any) -> dict[str, Any]:
    if isinstance(model, str):
        provider, _, model_id = model.partition("/")
        if not model_id:
            provider, model_id = "", provider
    else:
        provider = str(getattr(model, "provider", "") or "")
        model_id = str(getattr(model, "model_id", "") or "")
    out: dict[str, Any] = {attr.GEN_AI_REQUEST_MODEL: model_id}
    if provider:
        out[attr.GEN_AI_PROVIDER_NAME] = provider
        out[attr.GEN_AI_SYSTEM] = provider
    return out
