"""Mastra's observability routes over the spans the server keeps (`RecentSpans`).

Studio's traces view asks `POST /api/observability/traces/query` for a page of runs and
`GET /api/observability/traces/{traceId}` for one run's spans. Each of our OpenTelemetry spans
becomes one of Mastra's span records: the run is an `agent_run` (entity: the agent), a model
call a `model_generation` (with its token usage), a tool an `tool_call`, and every processor
hook a `processor_run` named after the processor and phase, its outcome (pass, modified,
abort, retry, error) and tripwire reason in `attributes`. A tripwire or error marks the span
(and the run) as failed, so a blocked run is visible in the list.

Only what we keep is answered: there is no log store, score store or feedback store, so those
routes answer Mastra's empty pages; without the studio (no spans kept) every list is empty.
A query may test the trace's fields and its spans (`spans: {some|none: ...}`); metadata paths
are refused with Mastra's 422 naming the path rather than ignored, and as no scores or feedback
are kept, `scores`/`feedback: {some: ...}` match no trace.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from pydantic import BaseModel, ConfigDict, Field

from sluicegate.server.deps import ERRORS
from sluicegate.server.errors import not_found
from sluicegate.server.identity import identity_of
from sluicegate.server.traces import (
    AGENT_ID,
    PROCESSOR_ID,
    PROCESSOR_OUTCOME,
    PROCESSOR_PHASE,
    RESOURCE_ID,
    TRIPWIRE_REASON,
    TRIPWIRE_RETRY,
    RecentSpans,
    run_root,
    run_subtree,
)

router = APIRouter(prefix="/api/observability", tags=["observability"], responses=ERRORS)

SERVICE_NAME = "sluicegate"
CONVERSATION_ID = "gen_ai.conversation.id"
MEMORY_RESOURCE = "sluicegate.memory.resource"
"""The resource a run's memory option names (the caller's own claim without an identity hook;
`RESOURCE_ID` is set only when a hook bound it)."""
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
_FAILED_OUTCOMES = frozenset(("abort", "retry", "error"))


# ----------------------------------------------------------------------------- span records


def mark_conversation(span: Any, memory: dict[str, Any] | None) -> None:
    """Put the run's thread and resource on the server's run span, so the trace list can show
    and filter them."""
    if memory is None:
        return
    span.set_attribute(CONVERSATION_ID, str(memory["thread"]))
    if memory.get("resource") is not None:
        span.set_attribute(MEMORY_RESOURCE, str(memory["resource"]))


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat().replace("+00:00", "Z")


def _plain(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return [_plain(v) for v in value]


def _span_type(span: ReadableSpan) -> str:
    attributes = span.attributes or {}
    if PROCESSOR_ID in attributes:
        return "processor_run"
    name = span.name
    if name.startswith("invoke_agent") or (AGENT_ID in attributes and name.startswith("POST ")):
        return "agent_run"
    if name.startswith("chat"):
        return "model_generation"
    if name.startswith("execute_tool"):
        return "tool_call"
    return "generic"


def failed(span: ReadableSpan) -> bool:
    outcome = (span.attributes or {}).get(PROCESSOR_OUTCOME)
    return span.status.status_code == StatusCode.ERROR or outcome in _FAILED_OUTCOMES


def _record(span: ReadableSpan, trace_id: str, root: ReadableSpan | None, light: bool) -> dict[str, Any]:
    """One span as Mastra's `SpanRecord`."""
    attributes = {k: _plain(v) for k, v in (span.attributes or {}).items()}
    root_attributes = (root.attributes or {}) if root is not None else {}
    kind = _span_type(span)
    name = span.name
    record_attributes: dict[str, Any] = dict(attributes)
    error: dict[str, Any] | None = None
    if kind == "processor_run":
        outcome = attributes.get(PROCESSOR_OUTCOME, "error" if failed(span) else "pass")
        name = f"processor {attributes.get(PROCESSOR_ID)} ({attributes.get(PROCESSOR_PHASE)})"
        record_attributes.update(
            processorId=attributes.get(PROCESSOR_ID),
            phase=attributes.get(PROCESSOR_PHASE),
            outcome=outcome,
            tripwireReason=attributes.get(TRIPWIRE_REASON),
            retry=bool(attributes.get(TRIPWIRE_RETRY, False)),
        )
    if kind == "model_generation" and (INPUT_TOKENS in attributes or OUTPUT_TOKENS in attributes):
        given = int(attributes.get(INPUT_TOKENS) or 0)
        taken = int(attributes.get(OUTPUT_TOKENS) or 0)
        record_attributes["usage"] = {
            "inputTokens": given,
            "outputTokens": taken,
            "totalTokens": given + taken,
        }
        record_attributes["model"] = attributes.get("gen_ai.request.model")
        record_attributes["provider"] = attributes.get("gen_ai.provider.name") or attributes.get(
            "gen_ai.system"
        )
    if failed(span):
        reason = attributes.get(TRIPWIRE_REASON) or span.status.description or "failed"
        error = {"message": str(reason), "name": "TripWire" if TRIPWIRE_REASON in attributes else "Error"}
    agent = root_attributes.get(AGENT_ID)
    ctx = span.context
    record: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": format(ctx.span_id, "016x") if ctx else "",
        "parentSpanId": format(span.parent.span_id, "016x") if span.parent else None,
        "name": name,
        "spanType": kind,
        "entityType": "agent" if agent else None,
        "entityId": agent,
        "entityName": agent,
        "resourceId": root_attributes.get(RESOURCE_ID) or root_attributes.get(MEMORY_RESOURCE),
        "threadId": attributes.get(CONVERSATION_ID) or root_attributes.get(CONVERSATION_ID),
        "runId": attributes.get("sluicegate.run_id"),
        "serviceName": SERVICE_NAME,
        "environment": None,
        "startedAt": _iso(span.start_time),
        "endedAt": _iso(span.end_time),
        "createdAt": _iso(span.start_time),
        "updatedAt": _iso(span.end_time),
        "isEvent": False,
        "error": error,
        "attributes": record_attributes,
        "metadata": None,
        "tags": None,
    }
    if not light:
        record["input"] = attributes.get("gen_ai.input.messages") or attributes.get(
            "gen_ai.tool.call.arguments"
        )
        record["output"] = attributes.get("gen_ai.output.messages") or attributes.get(
            "gen_ai.tool.call.result"
        )
    return record


class _Run:
    """One kept trace: its run's spans and the summary the trace list shows."""

    def __init__(self, trace_id: str, spans: list[ReadableSpan]) -> None:
        self.trace_id = trace_id
        self.spans = sorted(run_subtree(spans), key=lambda s: (s.start_time or 0, s.end_time or 0))
        self.root = run_root(spans)
        attributes = (self.root.attributes or {}) if self.root is not None else {}
        self.agent = attributes.get(AGENT_ID)
        self.bound = attributes.get(RESOURCE_ID)
        self.resource = self.bound or attributes.get(MEMORY_RESOURCE)
        self.thread = next(
            (
                s.attributes[CONVERSATION_ID]
                for s in self.spans
                if s.attributes and CONVERSATION_ID in s.attributes
            ),
            None,
        )
        self.started = min((s.start_time or 0 for s in self.spans), default=0)
        self.ended = max((s.end_time or 0 for s in self.spans), default=0)
        self.failed = any(failed(s) for s in self.spans)

    def fields(self) -> dict[str, Any]:
        """The trace-level fields queries filter on, as a trace summary carries them."""
        return {
            "traceId": self.trace_id,
            "threadId": self.thread,
            "resourceId": self.resource,
            "startedAt": _iso(self.started),
            "endedAt": _iso(self.ended),
            "entityName": self.agent,
            "entityType": "agent" if self.agent else None,
            "environment": None,
            "status": "error" if self.failed else "success",
        }

    def field(self, path: str) -> Any:
        return self.fields()[path]

    def summary(self) -> dict[str, Any]:
        root = self.root
        ctx = root.context if root is not None else None
        return {
            "rootSpanId": format(ctx.span_id, "016x") if ctx else "",
            "name": root.name if root is not None else "",
            "entityId": self.agent,
            "parentSpanId": None,
            "createdAt": _iso(self.started),
            "metadata": None,
            "inputPreview": None,
            **self.fields(),
        }


def _recent(request: Request) -> RecentSpans | None:
    spans: RecentSpans | None = request.app.state.spans
    return spans


def kept_runs(request: Request) -> list[_Run]:
    """The kept runs this caller may see (with an identity hook: only its own resource's)."""
    recent = _recent(request)
    if recent is None:
        return []
    identity = identity_of(request)
    runs = []
    for trace_id in recent.trace_ids():
        spans = recent.spans(trace_id)
        if not spans:
            continue  # started, not finished yet
        run = _Run(trace_id, spans)
        if identity is not None and run.bound != identity.resource_id:
            continue
        runs.append(run)
    return runs


def _run(request: Request, trace_id: str) -> _Run:
    for run in kept_runs(request):
        if run.trace_id == trace_id.lower():
            return run
    raise not_found("trace", trace_id)


# ----------------------------------------------------------------------------- trace query

TRACE_FIELDS = (
    "traceId",
    "threadId",
    "resourceId",
    "startedAt",
    "endedAt",
    "entityName",
    "entityType",
    "environment",
    "status",
)
_STRING_OPS = ["eq", "ne", "in", "notIn", "exists", "notExists"]
_ORDERED_OPS = [*_STRING_OPS, "lt", "lte", "gt", "gte"]
_SUGGESTED = frozenset(("entityName", "entityType", "environment", "status"))


def _descriptor(path: str, scope: str) -> dict[str, Any]:
    if path == "error":
        return {
            "path": path,
            "valueKind": "presence",
            "operators": ["exists", "notExists"],
            "valueSuggestions": False,
        }
    kind = {"startedAt": "timestamp", "endedAt": "timestamp", "durationMs": "number"}.get(path, "string")
    return {
        "path": path,
        "valueKind": kind,
        "operators": _STRING_OPS if kind == "string" else _ORDERED_OPS,
        "valueSuggestions": scope == "trace" and path in _SUGGESTED,
    }


class TimeRange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    start: datetime | None = None
    end: datetime | None = None
    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None


class PageBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int = Field(default=50, ge=1, le=500)
    after: str | None = None


class OrderBy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field: Literal["startedAt", "endedAt"] = "startedAt"
    direction: Literal["asc", "desc", "ASC", "DESC"] = "desc"


class TraceQueryBody(BaseModel):
    """Mastra's trace query, as far as it applies to spans kept in memory."""

    model_config = ConfigDict(extra="forbid")
    timeRange: TimeRange | None = None
    where: dict[str, Any] | None = None
    orderBy: OrderBy | list[OrderBy] | None = None
    page: PageBody | None = None


class QueryError(Exception):
    def __init__(self, path: list[str | int], message: str) -> None:
        super().__init__(message)
        self.path = path


SPAN_FIELDS = (
    "name",
    "spanType",
    "model",
    "provider",
    "startedAt",
    "endedAt",
    "durationMs",
    "status",
    "error",
    "entityType",
    "entityId",
    "entityName",
    "entityVersionId",
    "parentEntityVersionId",
    "rootEntityVersionId",
)
"""Mastra's span fields a `spans: {some|none}` clause may test (no span has a version here)."""

Getter = Callable[[str], Any]


def _span_fields(run: _Run, span: ReadableSpan) -> Getter:
    record = _record(span, run.trace_id, run.root, True)
    attributes = record["attributes"]
    values = {
        "name": record["name"],
        "spanType": record["spanType"],
        "model": attributes.get("model") or attributes.get("gen_ai.request.model"),
        "provider": attributes.get("provider") or attributes.get("gen_ai.provider.name"),
        "startedAt": record["startedAt"],
        "endedAt": record["endedAt"],
        "durationMs": ((span.end_time or 0) - (span.start_time or 0)) / 1e6,
        "status": "error" if record["error"] else "success",
        "error": record["error"],
        "entityType": record["entityType"],
        "entityId": record["entityId"],
        "entityName": record["entityName"],
    }
    return values.get


def _operand(node: Any, path: list[str | int], fields: tuple[str, ...]) -> tuple[str, Any]:
    """`{path}` or `{literal}`: which it is and its value."""
    if isinstance(node, dict) and set(node) == {"path"}:
        if node["path"] not in fields:
            raise QueryError([*path, "path"], f"field {node['path']!r} cannot be queried here")
        return "path", node["path"]
    if isinstance(node, dict) and set(node) == {"literal"}:
        return "literal", node["literal"]
    raise QueryError(path, "expected {path} or {literal}")


def _matches(run: _Run, predicate: Any, path: list[str | int]) -> bool:
    """Whether `run` satisfies a trace predicate: boolean combinations, comparisons,
    membership and presence on the trace's fields, and `spans: {some|none: ...}` on its spans.
    There are no scores or feedback here: `some` matches none, `none` every trace."""
    if isinstance(predicate, dict) and "op" not in predicate:
        for relation in ("spans", "scores", "feedback"):
            if relation in predicate:
                return _relation(run, relation, predicate[relation], [*path, relation])
    return _scalar(predicate, path, run.field, TRACE_FIELDS, lambda p, q: _matches(run, p, q))


def _relation(run: _Run, relation: str, clause: Any, path: list[str | int]) -> bool:
    if not isinstance(clause, dict) or len(clause) != 1 or next(iter(clause)) not in ("some", "none"):
        raise QueryError(path, "expected {some: predicate} or {none: predicate}")
    quantifier, inner = next(iter(clause.items()))
    if relation != "spans":
        return bool(quantifier == "none")
    found = False
    for span in run.spans:
        get = _span_fields(run, span)
        if _scalar(inner, [*path, quantifier], get, SPAN_FIELDS, None):
            found = True
            break
    return found if quantifier == "some" else not found


def _scalar(
    predicate: Any,
    path: list[str | int],
    get: Getter,
    fields: tuple[str, ...],
    nested: Callable[[Any, list[str | int]], bool] | None,
) -> bool:
    """A predicate over one set of `fields` read through `get`; `nested` evaluates the
    arguments of and/or/not (None: arguments are scalar predicates over the same fields)."""
    if not isinstance(predicate, dict):
        raise QueryError(path, "a predicate must be an object")

    def inner(arg: Any, where: list[str | int]) -> bool:
        return nested(arg, where) if nested is not None else _scalar(arg, where, get, fields, None)

    op = predicate.get("op")
    if op in ("and", "or"):
        args = predicate.get("args")
        if not isinstance(args, list):
            raise QueryError([*path, "args"], "must be a list")
        results = [inner(arg, [*path, "args", i]) for i, arg in enumerate(args)]
        return all(results) if op == "and" else any(results)
    if op == "not":
        return not inner(predicate.get("arg"), [*path, "arg"])
    if op in ("exists", "notExists"):
        field = predicate.get("path")
        if field not in fields:
            raise QueryError([*path, "path"], f"field {field!r} cannot be queried here")
        present = get(field) is not None
        return present if op == "exists" else not present
    if op in ("in", "notIn"):
        kind, value = _operand(predicate.get("value"), [*path, "value"], fields)
        actual = get(value) if kind == "path" else value
        members = predicate.get("set")
        if not isinstance(members, list):
            raise QueryError([*path, "set"], "must be a list")
        return bool((actual in members) == (op == "in"))
    if op in ("eq", "ne", "lt", "lte", "gt", "gte"):
        left_kind, left = _operand(predicate.get("left"), [*path, "left"], fields)
        right_kind, right = _operand(predicate.get("right"), [*path, "right"], fields)
        a = get(left) if left_kind == "path" else left
        b = get(right) if right_kind == "path" else right
        if op == "eq":
            return bool(a == b)
        if op == "ne":
            return bool(a != b)
        if a is None or b is None:
            return False
        try:
            return bool({"lt": a < b, "lte": a <= b, "gt": a > b, "gte": a >= b}[op])
        except TypeError:
            raise QueryError(path, f"cannot compare {a!r} with {b!r}") from None
    raise QueryError(path, f"unknown predicate {op!r}")


INVALID: dict[int | str, dict[str, Any]] = {
    422: ERRORS[400] | {"description": "Mastra's TRACE_QUERY_INVALID: `issues` name the paths."}
}


def _invalid(path: list[str | int], message: str) -> JSONResponse:
    return JSONResponse(
        {
            "error": f"{'.'.join(map(str, path))}: {message}",
            "field": ".".join(map(str, path)),
            "code": "TRACE_QUERY_INVALID",
            "message": "The trace query is invalid",
            "issues": [{"code": "invalid_request", "path": path, "message": message}],
        },
        status_code=422,
    )


def _cursor(run: _Run) -> str:
    return base64.urlsafe_b64encode(run.trace_id.encode()).decode()


@router.post("/traces/query", responses=INVALID)
async def query_traces(body: TraceQueryBody, request: Request) -> Any:
    """A page of runs, newest first by default; `page.after` continues from a returned
    `page.next`."""
    runs = kept_runs(request)
    window = body.timeRange
    if window is not None:
        start = window.start or window.from_
        end = window.end or window.to
        if start is not None:
            runs = [r for r in runs if r.started >= start.timestamp() * 1e9]
        if end is not None:
            runs = [r for r in runs if r.started <= end.timestamp() * 1e9]
    if body.where is not None:
        try:
            runs = [r for r in runs if _matches(r, body.where, ["where"])]
        except QueryError as exc:
            return _invalid(exc.path, str(exc))
    orders = body.orderBy if isinstance(body.orderBy, list) else [body.orderBy] if body.orderBy else []
    order = orders[0] if orders else OrderBy()
    key = "started" if order.field == "startedAt" else "ended"
    runs.sort(key=lambda r: (getattr(r, key), r.trace_id), reverse=order.direction.lower() == "desc")
    page = body.page or PageBody()
    if page.after:
        ids = [_cursor(r) for r in runs]
        if page.after not in ids:
            return JSONResponse(
                {
                    "error": "page.after: not a cursor this server returned",
                    "field": "page.after",
                    "code": "TRACE_QUERY_CURSOR_MALFORMED",
                    "message": "The trace query cursor is malformed",
                },
                status_code=400,
            )
        runs = runs[ids.index(page.after) + 1 :]
    shown = runs[: page.limit]
    more = len(runs) > page.limit
    return {"traces": [r.summary() for r in shown], "page": {"next": _cursor(shown[-1]) if more else None}}


class FieldsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timeRange: TimeRange | None = None
    predicateScope: Literal["trace", "spans", "scores", "feedback"] = "trace"
    search: str | None = Field(default=None, max_length=200)
    limit: int = Field(default=50, ge=1, le=500)


@router.post("/traces/query/fields")
async def trace_query_fields(body: FieldsBody) -> dict[str, Any]:
    """The fields a trace query may filter on in each scope (no scores or feedback are kept;
    no metadata is observed)."""
    fields: tuple[str, ...] = {"trace": TRACE_FIELDS, "spans": SPAN_FIELDS}.get(body.predicateScope, ())
    if body.search:
        fields = tuple(f for f in fields if body.search.lower() in f.lower())
    return {
        "canonicalFields": [_descriptor(f, body.predicateScope) for f in fields],
        "observedFields": [],
        "observedFieldsTruncated": False,
    }


class ValuesBody(FieldsBody):
    path: str = Field(min_length=1, max_length=200)


@router.post("/traces/query/values", responses=INVALID)
async def trace_query_values(body: ValuesBody, request: Request) -> Any:
    if body.predicateScope != "trace" or body.path not in _SUGGESTED:
        return _invalid(["path"], "Value suggestions are not available for this path")
    seen: list[Any] = []
    for run in kept_runs(request):
        value = run.field(body.path)
        if value is not None and value not in seen and (not body.search or body.search in str(value)):
            seen.append(value)
    return {"values": [{"value": v} for v in seen[: body.limit]]}


# ----------------------------------------------------------------------------- one trace


@router.get("/traces/{traceId}")
async def get_trace(traceId: str, request: Request) -> dict[str, Any]:
    """A run's spans as Mastra's span records, in start order."""
    run = _run(request, traceId)
    return {"traceId": run.trace_id, "spans": [_record(s, run.trace_id, run.root, False) for s in run.spans]}


@router.get("/traces/{traceId}/light")
async def get_trace_light(traceId: str, request: Request) -> dict[str, Any]:
    run = _run(request, traceId)
    return {"traceId": run.trace_id, "spans": [_record(s, run.trace_id, run.root, True) for s in run.spans]}


@router.get("/traces/{traceId}/spans/{spanId}")
async def get_span(traceId: str, spanId: str, request: Request) -> dict[str, Any]:
    run = _run(request, traceId)
    for span in run.spans:
        if span.context is not None and format(span.context.span_id, "016x") == spanId.lower():
            return {"span": _record(span, run.trace_id, run.root, False)}
    raise not_found("span", spanId)


# ----------------------------------------------------------------------------- discovery

_EntityType = Query(default=None, max_length=64)


@router.get("/discovery/entity-types")
async def entity_types(request: Request) -> dict[str, Any]:
    return {"entityTypes": ["agent"] if kept_runs(request) else []}


@router.get("/discovery/entity-names")
async def entity_names(request: Request, entityType: str | None = _EntityType) -> dict[str, Any]:
    """The agents that have kept runs (no other entity type has any here)."""
    if entityType not in (None, "agent"):
        return {"names": []}
    return {"names": sorted({r.agent for r in kept_runs(request) if r.agent})}


@router.get("/discovery/service-names")
async def service_names(request: Request) -> dict[str, Any]:
    return {"serviceNames": [SERVICE_NAME] if kept_runs(request) else []}


@router.get("/discovery/environments")
async def environments() -> dict[str, Any]:
    return {"environments": []}


@router.get("/discovery/tags")
async def tags() -> dict[str, Any]:
    return {"tags": []}


# ----------------------------------------------------------------------------- stores we do not keep


def _empty_page(name: str, page: int, per_page: int) -> dict[str, Any]:
    return {name: [], "pagination": {"total": 0, "page": page, "perPage": per_page, "hasMore": False}}


_Page = Query(default=0, ge=0, le=1_000_000)
_PerPage = Query(default=20, ge=1, le=1000)


@router.get("/logs")
async def logs(page: int = _Page, perPage: int = _PerPage) -> dict[str, Any]:
    """No log store: the server's logs go to its process's logging handlers."""
    return _empty_page("logs", page, perPage)


@router.get("/feedback")
async def feedback(page: int = _Page, perPage: int = _PerPage) -> dict[str, Any]:
    return _empty_page("feedback", page, perPage)


@router.get("/scores")
async def scores(page: int = _Page, perPage: int = _PerPage) -> dict[str, Any]:
    return _empty_page("scores", page, perPage)
