"""The studio's view of tracing: recent runs' finished spans, kept in memory by trace id.

`RecentSpans` is an OpenTelemetry `SpanProcessor`; `install_recent_spans` adds it to the global
SDK tracer provider (creating one when none is set), so whatever records spans in the process —
sluicegate's own tracing, or the server's request span — lands here. The timeline reads the
agreed attributes: `sluicegate.processor.id`, `.phase`, `.outcome`,
`sluicegate.tripwire.reason`, `sluicegate.tripwire.retry`.

Only the last `capacity` traces are kept: this is a debugging view, not a trace store.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import Span, StatusCode

PROCESSOR_ID = "sluicegate.processor.id"
PROCESSOR_PHASE = "sluicegate.processor.phase"
PROCESSOR_OUTCOME = "sluicegate.processor.outcome"
TRIPWIRE_REASON = "sluicegate.tripwire.reason"
TRIPWIRE_RETRY = "sluicegate.tripwire.retry"
AGENT_ID = "sluicegate.agent.id"
RESOURCE_ID = "sluicegate.resource.id"
"""Set on the server's run span when an identity hook bound the request to a resource."""
SERVER_APP = "sluicegate.server.app"
"""Set on the server's run span: which app (of those in the process) served the run."""


def is_run_span(name: str, attributes: Any) -> bool:
    """Whether a span starts an agent run: the server's request span or `invoke_agent`."""
    return name.startswith("invoke_agent") or bool(attributes and AGENT_ID in attributes)


class RecentSpans(SpanProcessor):
    """Keeps the finished spans of the last `capacity` agent runs, by 32-hex trace id.

    A trace is kept only once a run span (see `is_run_span`) starts in it, so the web
    framework's own spans for other requests neither fill the buffer nor evict runs."""

    def __init__(
        self, capacity: int = 200, max_spans_per_trace: int = 2000, *, app_key: str | None = None
    ) -> None:
        self.capacity = capacity
        self.app_key = app_key
        self.max_spans_per_trace = max_spans_per_trace
        self._traces: OrderedDict[str, list[ReadableSpan]] = OrderedDict()
        self._foreign: OrderedDict[str, None] = OrderedDict()  # runs another app served
        self._lock = threading.Lock()

    def on_start(self, span: Any, parent_context: otel_context.Context | None = None) -> None:
        ctx = span.get_span_context()
        if ctx is None or not is_run_span(span.name, span.attributes):
            return
        key = format(ctx.trace_id, "032x")
        owner = (span.attributes or {}).get(SERVER_APP)
        with self._lock:
            if owner is not None and owner != self.app_key:
                self._foreign[key] = None  # another app in this process serves this run
                while len(self._foreign) > self.capacity:
                    self._foreign.popitem(last=False)
                return
            if key not in self._traces and key not in self._foreign:
                self._traces[key] = []
                while len(self._traces) > self.capacity:
                    self._traces.popitem(last=False)

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.context
        if ctx is None:
            return
        key = format(ctx.trace_id, "032x")
        with self._lock:
            spans = self._traces.get(key)
            if spans is not None and len(spans) < self.max_spans_per_trace:
                spans.append(span)

    def shutdown(self) -> None:
        with self._lock:
            self._traces.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def spans(self, trace_id: str) -> list[ReadableSpan]:
        with self._lock:
            return list(self._traces.get(trace_id.lower(), ()))

    def trace_ids(self) -> list[str]:
        """Known trace ids, newest first."""
        with self._lock:
            return list(reversed(self._traces))


_install_lock = threading.Lock()


def install_recent_spans(capacity: int = 200, *, app_key: str | None = None) -> RecentSpans:
    """A new `RecentSpans` for one app, added to the global SDK tracer provider (one is
    created and set when the process has none)."""
    with _install_lock:
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            trace.set_tracer_provider(TracerProvider())
            provider = trace.get_tracer_provider()
        recent = RecentSpans(capacity, app_key=app_key)
        if isinstance(provider, TracerProvider):
            provider.add_span_processor(recent)
        return recent


def trace_headers(span: Span) -> dict[str, str]:
    """`x-sluicegate-trace-id` for a recorded span; nothing when tracing is off."""
    ctx = span.get_span_context()
    return {"x-sluicegate-trace-id": format(ctx.trace_id, "032x")} if ctx.is_valid else {}


@contextmanager
def run_span(span: Span) -> Iterator[Span]:
    """Make `span` current for the run it covers and end it afterwards."""
    with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        yield span


def start_request_span(name: str, attributes: dict[str, Any]) -> Span:
    """The span the server opens around one run; its trace id names the run's timeline."""
    return trace.get_tracer("sluicegate.server").start_span(name, attributes=attributes)


def _plain(value: Any) -> Any:
    """An attribute value as JSON (OpenTelemetry stores sequences as tuples)."""
    return (
        value if isinstance(value, (str, int, float, bool)) or value is None else [_plain(v) for v in value]
    )


def _kind(span: ReadableSpan) -> str:
    attributes = span.attributes or {}
    if PROCESSOR_ID in attributes:
        return "processor"
    name = span.name
    for prefix, kind in (("invoke_agent", "agent"), ("chat", "model"), ("execute_tool", "tool")):
        if name.startswith(prefix):
            return kind
    return "server" if name.startswith("POST ") else "other"


def run_root(spans: list[ReadableSpan]) -> ReadableSpan | None:
    """The outermost run span of a trace (the server's request span, else `invoke_agent`)."""
    served = [s for s in spans if AGENT_ID in (s.attributes or {})]
    runs = served or [s for s in spans if is_run_span(s.name, s.attributes)]
    return min(runs, key=lambda s: s.start_time or 0) if runs else None


def run_subtree(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """The run span and its descendants (the web framework's spans around it left out)."""
    root = run_root(spans)
    if root is None or root.context is None:
        return spans
    keep = {root.context.span_id}
    changed = True
    while changed:
        changed = False
        for span in spans:
            if (
                span.context
                and span.parent
                and span.parent.span_id in keep
                and span.context.span_id not in keep
            ):
                keep.add(span.context.span_id)
                changed = True
    return [s for s in spans if s.context and s.context.span_id in keep]


def timeline(spans: list[ReadableSpan]) -> dict[str, Any]:
    """The spans of one run as rows for the studio, in start order, with processor decisions
    (outcome, tripwire reason, retry) pulled out of the agreed attributes."""
    spans = run_subtree(spans)
    if not spans:
        return {"spans": [], "processors": [], "durationMs": 0.0}
    ordered = sorted(spans, key=lambda s: (s.start_time or 0, s.end_time or 0))
    origin = min(s.start_time or 0 for s in ordered)
    end = max(s.end_time or 0 for s in ordered)
    rows: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    for span in ordered:
        attributes = dict(span.attributes or {})
        start = span.start_time or origin
        finish = span.end_time or start
        ctx = span.context
        row: dict[str, Any] = {
            "name": span.name,
            "kind": _kind(span),
            "spanId": format(ctx.span_id, "016x") if ctx else "",
            "parentId": format(span.parent.span_id, "016x") if span.parent else None,
            "startMs": round((start - origin) / 1e6, 3),
            "durationMs": round((finish - start) / 1e6, 3),
            "status": "error" if span.status.status_code == StatusCode.ERROR else "ok",
            "attributes": {k: _plain(v) for k, v in attributes.items()},
        }
        if row["kind"] == "processor":
            outcome = attributes.get(PROCESSOR_OUTCOME, "error" if row["status"] == "error" else "pass")
            decision = {
                "processorId": attributes.get(PROCESSOR_ID),
                "phase": attributes.get(PROCESSOR_PHASE),
                "outcome": outcome,
                "durationMs": row["durationMs"],
                "startMs": row["startMs"],
                "reason": attributes.get(TRIPWIRE_REASON),
                "retry": bool(attributes.get(TRIPWIRE_RETRY, False)),
            }
            row["decision"] = decision
            decisions.append(decision)
        rows.append(row)
    return {"spans": rows, "processors": decisions, "durationMs": round((end - origin) / 1e6, 3)}
