"""The run's trace carried into its activities, as a W3C `traceparent` in each activity's input,
and the caller's trace carried into the run, in its start input.

The run's spans (`invoke_agent`, `chat`, `execute_tool`, processor spans) are made by the agent
loop in workflow code; the activity runs elsewhere (another task, maybe another worker). The
workflow puts the context of the span the activity belongs under (the step's `chat` span, the
call's `execute_tool` span) into the input, and the activity runs with it attached, so what
the provider client and the tool's own code trace nests under the run, in its trace.

The run itself continues the trace of whoever started it: `TemporalRuns.start` puts the span
current in the caller's process (or a `traceparent` given to it, e.g. the header of a
`POST /api/agents/{id}/stream`) into the start input, and the workflow makes that context its
own (`continue_caller`), so the run's `invoke_agent` span is a child of the caller's span.

An input in the payload, not a Temporal header: it is recorded in the run's history with the
call, so a retried attempt or a replay on another worker continues the same trace. Nothing here
imports OpenTelemetry in a process that does not use it (see `tracing.state`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from sluicegate.tracing.state import opentelemetry_in_use

log = logging.getLogger("sluicegate.durable")

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


def attached(call: dict[str, Any]) -> AbstractContextManager[None]:
    """Run the activity's body with the workflow's context (from `inject`) as the current one
    (an untraced run's call carries none: nothing to attach, at no generator's cost)."""
    carrier = call.get(KEY)
    if not carrier:
        return nullcontext()
    if not isinstance(carrier, dict) or not all(isinstance(v, str) for v in carrier.values()):
        raise ValueError(f"{KEY} must be a map of strings (a W3C trace context), got {carrier!r}")
    return _attached(carrier)


@contextmanager
def _attached(carrier: dict[str, str]) -> Iterator[None]:
    from opentelemetry import context as otel_context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    token = otel_context.attach(TraceContextTextMapPropagator().extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


def checked_carrier(carrier: Mapping[str, str]) -> dict[str, str] | None:
    """`carrier` (`traceparent`, optional `tracestate`) as it propagates, or None when its
    `traceparent` is no valid W3C trace context."""
    if not isinstance(carrier, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in carrier.items()
    ):
        return None
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    propagator = TraceContextTextMapPropagator()
    context = propagator.extract({k.lower(): v for k, v in carrier.items()})
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    out: dict[str, str] = {}
    propagator.inject(out, context=context)
    return out


def from_headers(headers: Mapping[str, str]) -> dict[str, str] | None:
    """The trace context a run started by an HTTP request continues, taken from its
    `traceparent`/`tracestate` headers; None when a span is current (an instrumented server's
    request span, already a child of the header's context: `start` continues it) or when the
    header is absent or malformed (ignored, as W3C Trace Context asks of a receiver)."""
    traceparent = headers.get("traceparent")
    if traceparent is None:
        return None
    from opentelemetry import trace

    if trace.get_current_span().get_span_context().is_valid:
        return None
    carrier = {"traceparent": traceparent}
    tracestate = headers.get("tracestate")
    if tracestate is not None:
        carrier["tracestate"] = tracestate
    checked = checked_carrier(carrier)
    if checked is None:
        log.info("ignored a malformed traceparent header %r: the run starts a new trace", traceparent[:100])
    return checked


def continue_caller(start: dict[str, Any]) -> None:
    """Make the caller's context in a run's start input (`KEY`) the current context of the
    workflow's task, for the rest of it: the run's spans (`invoke_agent` of the run and of every
    resumption after an approval) start under it. The start input is in the run's history, so
    every replay continues the same trace. The context belongs to the task and ends with it."""
    carrier = start.get(KEY)
    if not carrier:
        return
    checked = checked_carrier(carrier) if isinstance(carrier, Mapping) else None
    if checked is None:
        log.warning(
            "a durable run's start input has a malformed %s %r: the run starts a new trace", KEY, carrier
        )
        return
    from opentelemetry import context as otel_context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    otel_context.attach(TraceContextTextMapPropagator().extract(checked))
