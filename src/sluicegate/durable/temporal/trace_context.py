"""The run's trace carried into its activities, as a W3C `traceparent` in each activity's input.

The run's spans (`invoke_agent`, `chat`, `execute_tool`, processor spans) are made by the agent
loop in workflow code; the activity runs elsewhere (another task, maybe another worker). The
workflow puts the context of the span the activity belongs under (the step's `chat` span, the
call's `execute_tool` span) into the input, and the activity runs with it attached, so what
the provider client and the tool's own code trace nests under the run, in its trace.

An input in the activity's payload, not a Temporal header: it is recorded in the run's history
with the call, so a retried attempt on another worker continues the same trace. Nothing here
imports OpenTelemetry in a process that does not use it (see `tracing.state`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sluicegate.tracing.state import opentelemetry_in_use

KEY = "traceContext"
"""The activity input's field: `{"traceparent": ..., "tracestate"?: ...}`, absent when untraced."""


def inject(call: dict[str, Any], span: Any = None) -> dict[str, Any]:
    """`call` with the context of `span` (else the current span) under `KEY`, when it is valid."""
    if not opentelemetry_in_use():
        return call
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    context = trace.set_span_in_context(span) if span is not None else None
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, context=context)
    if "traceparent" in carrier:
        call[KEY] = carrier
    return call


@contextmanager
def attached(call: dict[str, Any]) -> Iterator[None]:
    """Run the activity's body with the workflow's context (from `inject`) as the current one."""
    carrier = call.get(KEY)
    if not carrier:
        yield
        return
    if not isinstance(carrier, dict) or not all(isinstance(v, str) for v in carrier.values()):
        raise ValueError(f"{KEY} must be a map of strings (a W3C trace context), got {carrier!r}")
    from opentelemetry import context as otel_context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    token = otel_context.attach(TraceContextTextMapPropagator().extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)
