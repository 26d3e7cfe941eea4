"""The studio's view of tracing: recent runs' finished spans, by trace id.

`RecentSpans` is an OpenTelemetry `SpanProcessor`; `install_recent_spans` feeds it from the global
SDK tracer provider (creating one when none is set), so whatever records spans in the process —
sluicegate's own tracing, or the server's request span — lands here. The timeline reads the
agreed attributes: `sluicegate.processor.id`, `.phase`, `.outcome`,
`sluicegate.tripwire.reason`, `sluicegate.tripwire.retry`.

The newest `capacity` traces are kept in memory, which is what `spans()` and `trace_ids()`
read. With a `SpanStore` (the app's storage), finished spans are also written there, in
batches by a background task on the server's event loop (`on_end` only appends to a list, so a
run's stream never waits on storage), and what other server instances (or this app before a
reload) stored is read back: at the first `sync()`, then every `flush_interval` seconds. The
store keeps the newest `capacity` traces and none older than `max_age`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from sluicegate.storage.span_store import DEFAULT_TRACE_MAX_AGE, SpanStore, StoredSpan, check_bounds
from sluicegate.tracing.attributes import (
    DURABLE_NAMESPACE,
    DURABLE_TASK_QUEUE,
    DURABLE_WORKFLOW_ID,
    TOOL_REFUSAL_REASON,
)

log = logging.getLogger("sluicegate.server.traces")

PROCESSOR_ID = "sluicegate.processor.id"
PROCESSOR_PHASE = "sluicegate.processor.phase"
PROCESSOR_OUTCOME = "sluicegate.processor.outcome"
TRIPWIRE_REASON = "sluicegate.tripwire.reason"
TRIPWIRE_RETRY = "sluicegate.tripwire.retry"
AGENT_ID = "sluicegate.agent.id"
RUN_ID = "sluicegate.run_id"
"""On a run's `invoke_agent` span: the agent run it belongs to (kept when a run is resumed)."""
RESOURCE_ID = "sluicegate.resource.id"
"""Set on the server's run span when an identity hook bound the request to a resource."""
SERVER_APP = "sluicegate.server.app"
"""Set on the server's run span: which app (of those in the process) served the run."""


def is_run_span(name: str, attributes: Any) -> bool:
    """Whether a span starts an agent run: the server's request span or `invoke_agent`."""
    return name.startswith("invoke_agent") or bool(attributes and AGENT_ID in attributes)


class RecentSpans(SpanProcessor):
    """Keeps the finished spans of the last `capacity` agent runs, by 32-hex trace id, and
    (with a `store`) persists them and reads back what other instances stored.

    A trace is kept only once a run span (see `is_run_span`) starts in it, so the web
    framework's own spans for other requests neither fill the buffer nor evict runs."""

    OVERLAP = 200
    """How far before its last seq a reader asks again (PostgreSQL commits seqs out of order)."""
    MAX_PENDING = 100_000
    """Spans waiting to be written beyond this (storage down for long) are dropped, oldest first."""

    def __init__(
        self,
        capacity: int = 200,
        max_spans_per_trace: int = 2000,
        *,
        app_key: str | None = None,
        store: SpanStore | None = None,
        max_age: timedelta = DEFAULT_TRACE_MAX_AGE,
        flush_interval: float = 1.0,
    ) -> None:
        check_bounds(capacity, max_age)
        if not flush_interval > 0:
            raise ValueError(f"flush_interval must be a positive number of seconds, got {flush_interval!r}")
        self.capacity = capacity
        self.app_key = app_key
        self.max_spans_per_trace = max_spans_per_trace
        self.store = store
        self.max_age = max_age
        self.flush_interval = flush_interval
        self._traces: OrderedDict[str, list[ReadableSpan]] = OrderedDict()
        self._started: dict[str, int] = {}
        self._span_ids: dict[str, set[int]] = {}
        self._foreign: OrderedDict[str, None] = OrderedDict()  # runs another app served
        self._lock = threading.Lock()
        self._pending: list[ReadableSpan] = []
        self._seq = 0
        self._loaded = False
        self._syncing: asyncio.Lock | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop the store is used on (the server's): the writer runs there only."""
        self._closed = False

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
                self._add_trace(key, span.start_time or 0)

    def _add_trace(self, key: str, started: int) -> None:
        self._traces[key] = []
        self._started[key] = started
        self._span_ids[key] = set()
        while len(self._traces) > self.capacity:
            oldest = min(self._traces, key=lambda k: self._started.get(k, 0))
            self._drop(oldest)

    def _drop(self, key: str) -> None:
        self._traces.pop(key, None)
        self._started.pop(key, None)
        self._span_ids.pop(key, None)

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.context
        if ctx is None:
            return
        key = format(ctx.trace_id, "032x")
        with self._lock:
            spans = self._traces.get(key)
            if spans is None or len(spans) >= self.max_spans_per_trace:
                return
            spans.append(span)
            self._span_ids[key].add(ctx.span_id)
            if self.store is None or self._closed:
                return
            self._pending.append(span)
            if len(self._pending) > self.MAX_PENDING:
                del self._pending[: len(self._pending) - self.MAX_PENDING]
                log.error("trace storage is behind: dropped the oldest unwritten spans")
        self._start_flusher()

    def shutdown(self) -> None:
        with self._lock:
            self._traces.clear()
            self._started.clear()
            self._span_ids.clear()
        task, self._task = self._task, None
        if task is not None and not task.get_loop().is_closed():  # at exit the loop may be gone
            task.cancel()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def spans(self, trace_id: str) -> list[ReadableSpan]:
        with self._lock:
            return list(self._traces.get(trace_id.lower(), ()))

    def trace_ids(self) -> list[str]:
        """Known trace ids, newest first."""
        with self._lock:
            return sorted(self._traces, key=lambda k: self._started.get(k, 0), reverse=True)

    # ------------------------------------------------------------------ persistence

    def _start_flusher(self) -> None:
        """Start the background writer (once) on the loop the store is used on: the first loop
        that syncs or ends a span; a span ended on another thread's loop is handed over."""
        if self._closed or (self._task is not None and not self._task.done()):
            return
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None and not _hosts_tasks(loop):
            loop = None  # a Temporal workflow's loop: the span is written from the home loop
        if self._loop is None or (self._loop.is_closed() and loop is not None):
            self._loop = loop  # the first loop; or the next one, if that one has gone
        home = self._loop
        if home is None or home.is_closed():
            return  # no loop yet: the next sync() writes it
        if loop is home:
            self._task = home.create_task(self._flush_loop(), name="sluicegate-trace-writer")
        else:
            home.call_soon_threadsafe(self._start_flusher)

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval)
            try:
                await self.sync()
            except Exception:  # storage down: keep the spans and try again later
                log.exception("could not write or read trace spans; retrying in %ss", self.flush_interval)

    async def sync(self) -> None:
        """Write the spans waiting to be stored, prune the store, and read back what others
        stored since the last time (everything recent, the first time)."""
        if self.store is None:
            return
        if self._syncing is None:
            self._syncing = asyncio.Lock()
        async with self._syncing:
            await self._write()
            await self._read()
        self._start_flusher()

    async def _write(self) -> None:
        assert self.store is not None
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch:
            return
        stored = [s for s in (stored_span(span) for span in batch) if s is not None]
        try:
            await self.store.save_spans(stored)
            await self.store.prune_spans(max_traces=self.capacity, max_age=self.max_age)
        except BaseException:
            with self._lock:
                self._pending[:0] = batch  # written next time, in order
            raise

    async def _read(self) -> None:
        assert self.store is not None
        if not self._loaded:
            found = await self.store.recent_trace_spans(self.capacity)
            self._merge(found)
            self._loaded = True
            return
        if await self.store.latest_span_seq() <= self._seq:
            return  # nothing new (the common case: one small query)
        while True:
            found = await self.store.spans_since(max(0, self._seq - self.OVERLAP))
            fresh = [s for s in found if s.seq > self._seq]
            self._merge(found)
            if len(found) < 5000 or not fresh:
                return

    def _merge(self, stored: list[StoredSpan]) -> None:
        cutoff = _now_ns() - int(self.max_age.total_seconds() * 1e9)
        with self._lock:
            for item in stored:
                self._seq = max(self._seq, item.seq)
                key = item.trace_id
                if item.start_ns < cutoff:
                    continue
                if key not in self._traces:
                    if len(self._traces) >= self.capacity and item.start_ns < min(self._started.values()):
                        continue  # older than everything kept
                    self._add_trace(key, item.start_ns)
                    if key not in self._traces:
                        continue
                span_id = int(item.span_id, 16)
                ids = self._span_ids[key]
                spans = self._traces[key]
                if span_id in ids or len(spans) >= self.max_spans_per_trace:
                    continue
                span = span_from_record(item.record)
                if span is None:
                    continue
                ids.add(span_id)
                spans.append(span)
                self._started[key] = min(self._started[key] or item.start_ns, item.start_ns)
            for key in [k for k, started in self._started.items() if started and started < cutoff]:
                self._drop(key)

    async def aclose(self) -> None:
        """Stop the background writer and write what is left; spans ending later are not stored."""
        self._closed = True
        detach_recent_spans(self)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        if self.store is not None:
            try:
                await self._write()
            except Exception:
                log.exception("could not write the last trace spans")


def _hosts_tasks(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the writer may run on `loop`. A Temporal workflow runs its code on a loop of its
    own (deterministic, without `is_closed` or timers of wall-clock time): a span ended in
    workflow code must neither adopt it nor fail the workflow task."""
    try:
        return not loop.is_closed()
    except NotImplementedError:
        return False


def _now_ns() -> int:
    return time.time_ns()


def stored_span(span: ReadableSpan) -> StoredSpan | None:
    """A finished span as the store keeps it (JSON), or None without a context."""
    ctx = span.context
    if ctx is None:
        return None
    attributes = dict(span.attributes or {})
    trace_id = format(ctx.trace_id, "032x")
    span_id = format(ctx.span_id, "016x")
    start = span.start_time or 0
    record: dict[str, Any] = {
        "name": span.name,
        "traceId": trace_id,
        "spanId": span_id,
        "parentId": format(span.parent.span_id, "016x") if span.parent else None,
        "kind": span.kind.name,
        "start": span.start_time or 0,
        "end": span.end_time or span.start_time or 0,
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "attributes": {k: _plain(v) for k, v in attributes.items()},
        "events": [_event(e) for e in span.events],
    }
    agent = attributes.get(AGENT_ID)
    resource = attributes.get(RESOURCE_ID)
    return StoredSpan(
        trace_id=trace_id,
        span_id=span_id,
        start_ns=start,
        record=record,
        agent_id=agent if isinstance(agent, str) else None,
        resource_id=resource if isinstance(resource, str) else None,
    )


def _event(event: Any) -> dict[str, Any]:
    attributes = {k: _plain(v) for k, v in (event.attributes or {}).items()}
    return {"name": event.name, "time": event.timestamp, "attributes": attributes}


def span_from_record(record: dict[str, Any]) -> ReadableSpan | None:
    """A stored record as a `ReadableSpan` again (None for a record this version cannot read)."""
    try:
        trace_id = int(record["traceId"], 16)
        context = SpanContext(trace_id, int(record["spanId"], 16), False, TraceFlags(TraceFlags.SAMPLED))
        parent_id = record.get("parentId")
        parent = SpanContext(trace_id, int(parent_id, 16), False) if parent_id else None
        status = record.get("status") or {}
        return ReadableSpan(
            name=str(record["name"]),
            context=context,
            parent=parent,
            attributes=dict(record.get("attributes") or {}),
            events=[
                Event(str(e["name"]), dict(e.get("attributes") or {}), int(e.get("time") or 0))
                for e in record.get("events") or ()
            ],
            kind=SpanKind[str(record.get("kind", "INTERNAL"))],
            status=Status(StatusCode[str(status.get("code", "UNSET"))], status.get("description")),
            start_time=int(record["start"]),
            end_time=int(record["end"]),
        )
    except (KeyError, ValueError, TypeError):
        log.warning("skipping a stored span this version cannot read: %.200r", record)
        return None


_install_lock = threading.Lock()


class _Fanout(SpanProcessor):
    """The one span processor sluicegate adds to a tracer provider: it hands each span to the
    live apps' `RecentSpans`. OpenTelemetry cannot remove a span processor, so adding one per
    app would keep every app ever created (a test suite makes hundreds); an app that closes,
    or is collected, leaves this set."""

    def __init__(self) -> None:
        self.members: weakref.WeakSet[RecentSpans] = weakref.WeakSet()

    def on_start(self, span: Any, parent_context: otel_context.Context | None = None) -> None:
        for member in list(self.members):
            member.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        for member in list(self.members):
            member.on_end(span)

    def shutdown(self) -> None:
        for member in list(self.members):
            member.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_fanouts: weakref.WeakKeyDictionary[TracerProvider, _Fanout] = weakref.WeakKeyDictionary()


def install_recent_spans(
    capacity: int = 200,
    *,
    app_key: str | None = None,
    store: SpanStore | None = None,
    max_age: timedelta = DEFAULT_TRACE_MAX_AGE,
) -> RecentSpans:
    """A new `RecentSpans` for one app, fed by the global SDK tracer provider (one is created
    and set when the process has none) until the app closes (`RecentSpans.aclose`)."""
    with _install_lock:
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            trace.set_tracer_provider(TracerProvider())
            provider = trace.get_tracer_provider()
        recent = RecentSpans(capacity, app_key=app_key, store=store, max_age=max_age)
        if isinstance(provider, TracerProvider):
            fanout = _fanouts.get(provider)
            if fanout is None:
                fanout = _fanouts[provider] = _Fanout()
                provider.add_span_processor(fanout)
            fanout.members.add(recent)
        return recent


def detach_recent_spans(recent: RecentSpans) -> None:
    """Stop feeding `recent` spans (its app closed)."""
    with _install_lock:
        for fanout in list(_fanouts.values()):
            fanout.members.discard(recent)


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


def run_id_of(spans: list[ReadableSpan]) -> str | None:
    """The agent run a trace belongs to: a run resumed after a decision is a new trace of the
    same run id."""
    for span in spans:
        value = (span.attributes or {}).get(RUN_ID)
        if isinstance(value, str) and value:
            return value
    return None


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


def durable_run(spans: list[ReadableSpan], temporal_ui: str | None) -> dict[str, Any] | None:
    """The Temporal workflow that ran a durable run (from its `invoke_agent` span), with the
    CLI command that shows it and, when the server knows Temporal's Web UI, the page's URL.
    The URL's base comes from settings only; the ids from the spans are path-quoted into it."""
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        attributes = span.attributes or {}
        workflow_id = attributes.get(DURABLE_WORKFLOW_ID)
        if not isinstance(workflow_id, str) or not workflow_id:
            continue
        namespace = attributes.get(DURABLE_NAMESPACE)
        namespace = namespace if isinstance(namespace, str) and namespace else "default"
        queue = attributes.get(DURABLE_TASK_QUEUE)
        out: dict[str, Any] = {
            "workflowId": workflow_id,
            "namespace": namespace,
            "taskQueue": queue if isinstance(queue, str) else None,
            "command": "temporal workflow show -w "
            + shlex.quote(workflow_id)
            + ("" if namespace == "default" else " --namespace " + shlex.quote(namespace)),
            "url": None,
        }
        if temporal_ui:
            path = f"/namespaces/{quote(namespace, safe='')}/workflows/{quote(workflow_id, safe='')}"
            out["url"] = temporal_ui + path
        return out
    return None


OUTCOME_WORDS = {
    "pass": "passed",
    "modified": "modified",
    "held": "held",
    "abort": "blocked",
    "retry": "retry",
    "error": "error",
    "refused": "refused the call",
}


def timeline(spans: list[ReadableSpan]) -> dict[str, Any]:
    """The spans of one run as rows for the studio, in start order, with processor decisions
    (outcome, tripwire reason, retry) pulled out of the agreed attributes, and each row's
    `detail` for the inspector (see `inspect_row`)."""
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
            "statusMessage": span.status.description,
            "attributes": {k: _plain(v) for k, v in attributes.items()},
            "events": [
                {"name": e.name, "attributes": {k: _plain(v) for k, v in (e.attributes or {}).items()}}
                for e in span.events
            ],
        }
        if row["kind"] == "processor":
            outcome = attributes.get(PROCESSOR_OUTCOME, "error" if row["status"] == "error" else "pass")
            decision = {
                "processorId": attributes.get(PROCESSOR_ID),
                "phase": attributes.get(PROCESSOR_PHASE),
                "outcome": outcome,
                "label": f"{attributes.get(PROCESSOR_ID)} · {attributes.get(PROCESSOR_PHASE)}: "
                f"{OUTCOME_WORDS.get(str(outcome), outcome)}",
                "durationMs": row["durationMs"],
                "startMs": row["startMs"],
                "reason": attributes.get(TRIPWIRE_REASON) or attributes.get(TOOL_REFUSAL_REASON),
                "retry": bool(attributes.get(TRIPWIRE_RETRY, False)),
            }
            row["decision"] = decision
            decisions.append(decision)
        row["detail"] = inspect_row(row)
        rows.append(row)
    return {"spans": rows, "processors": decisions, "durationMs": round((end - origin) / 1e6, 3)}


def inspect_row(row: dict[str, Any]) -> dict[str, Any]:
    """What the inspector shows for one row: for a processor its phase, outcome, chunks,
    what it held, its redactions by kind and (content captured) the text before and after it;
    for a model call the prompt, answer, tokens and cost; for a tool its arguments and result.
    Content appears only when the spans carry it (capture_content / capture_changes)."""
    a = row["attributes"]
    kind = row["kind"]
    detail: dict[str, Any] = {"kind": kind, "durationMs": row["durationMs"], "status": row["status"]}
    if row["status"] == "error" and row.get("statusMessage"):
        detail["error"] = row["statusMessage"]
    if "sluicegate.step_number" in a:
        detail["step"] = a["sluicegate.step_number"]
    if "sluicegate.hook.duration_ms" in a:
        detail["hookMs"] = a["sluicegate.hook.duration_ms"]
    if kind == "processor":
        decision = row.get("decision") or {}
        detail.update(
            processorId=decision.get("processorId"),
            phase=decision.get("phase"),
            outcome=decision.get("outcome"),
            reason=decision.get("reason"),
        )
        if "sluicegate.stream.chunks_seen" in a:
            detail["chunks"] = {
                "seen": a.get("sluicegate.stream.chunks_seen", 0),
                "dropped": a.get("sluicegate.stream.chunks_dropped", 0),
                "modified": a.get("sluicegate.stream.chunks_modified", 0),
            }
        if "sluicegate.stream.held_chars" in a:
            detail["held"] = {
                "chars": a["sluicegate.stream.held_chars"],
                "ms": a.get("sluicegate.stream.held_ms"),
            }
        redactions: dict[str, int] = {}
        for event in row["events"]:
            if event["name"] == "sluicegate.redaction":
                kind_name = str(event["attributes"].get("sluicegate.redaction.kind"))
                redactions[kind_name] = redactions.get(kind_name, 0) + int(
                    event["attributes"].get("sluicegate.redaction.count", 1)
                )
        detail["redactions"] = redactions
        if "sluicegate.content.before" in a or "sluicegate.content.after" in a:
            detail["change"] = {
                "before": readable(a.get("sluicegate.content.before")),
                "after": readable(a.get("sluicegate.content.after")),
            }
    elif kind == "model":
        detail.update(
            model=a.get("gen_ai.response.model") or a.get("gen_ai.request.model"),
            provider=a.get("gen_ai.provider.name"),
            inputTokens=a.get("gen_ai.usage.input_tokens"),
            outputTokens=a.get("gen_ai.usage.output_tokens"),
            costUsd=a.get("sluicegate.usage.cost_usd"),
            finishReasons=a.get("gen_ai.response.finish_reasons"),
            replayed=bool(a.get("sluicegate.response.replayed", False)),
        )
        if "gen_ai.input.messages" in a:
            detail["prompt"] = readable(a["gen_ai.input.messages"])
        if "gen_ai.output.messages" in a:
            detail["answer"] = readable(a["gen_ai.output.messages"])
    elif kind == "tool":
        detail.update(tool=a.get("gen_ai.tool.name"), callId=a.get("gen_ai.tool.call.id"))
        if "gen_ai.tool.call.arguments" in a:
            detail["arguments"] = readable(a["gen_ai.tool.call.arguments"])
        if "gen_ai.tool.call.result" in a:
            detail["result"] = readable(a["gen_ai.tool.call.result"])
        if "sluicegate.tool.waiting" in a:
            detail["waiting"] = a["sluicegate.tool.waiting"]
    elif kind == "agent":
        detail.update(
            inputTokens=a.get("gen_ai.usage.input_tokens"),
            outputTokens=a.get("gen_ai.usage.output_tokens"),
            steps=a.get("sluicegate.steps"),
            finishReason=a.get("sluicegate.finish_reason"),
        )
        if isinstance(a.get(DURABLE_WORKFLOW_ID), str):
            detail["workflowId"] = a[DURABLE_WORKFLOW_ID]
    return detail


def readable(value: Any) -> str | None:
    """A captured value (JSON text) as text a person reads: messages as `role: text` lines,
    a string as itself, anything else as indented JSON."""
    if value is None:
        return None
    try:
        data = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return str(value)
    if isinstance(data, str):
        return data
    messages: list[Any] | None = None
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        messages = [*(data.get("system") or []), *data["messages"]]
    elif isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        messages = data
    if messages is None:
        return json.dumps(data, indent=2, ensure_ascii=False)
    return "\n".join(
        f"{m.get('role', 'system')}: {_message_text(m)}" for m in messages if isinstance(m, dict)
    )


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content", message.get("parts"))
    if isinstance(content, dict):  # a stored message: {format, parts, content}
        content = content.get("parts") or content.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False)
    out: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            out.append(str(part))
            continue
        kind = part.get("type")
        if kind == "text" or kind == "reasoning":
            out.append(str(part.get("text", part.get("content", ""))))
        elif kind in ("tool-call", "tool_call"):
            name = part.get("toolName") or part.get("name")
            args = part.get("input", part.get("args", part.get("arguments")))
            out.append(f"[tool call {name} {json.dumps(args, ensure_ascii=False)}]")
        elif kind in ("tool-result", "tool_call_response"):
            name = part.get("toolName") or part.get("name")
            result = part.get("output", part.get("result", part.get("response")))
            out.append(f"[tool result {name} {json.dumps(result, ensure_ascii=False)}]")
        elif kind == "tool-invocation":
            inv = part.get("toolInvocation") or {}
            out.append(
                f"[tool {inv.get('toolName')} {json.dumps(inv.get('args'), ensure_ascii=False)}"
                + (f" → {json.dumps(inv.get('result'), ensure_ascii=False)}" if "result" in inv else "")
                + "]"
            )
        elif kind == "step-start":
            continue
        else:
            out.append(json.dumps(part, ensure_ascii=False))
    return " ".join(o for o in out if o)
