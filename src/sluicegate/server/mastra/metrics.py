"""Mastra's metrics queries (`/api/observability/metrics/...`) computed from the kept spans.

Studio's metrics page asks for a few named metrics; each kept run yields them as events:
`mastra_agent_duration_ms` (one per run, `status` "error" when a processor tripped or a span
failed, so tripwires count as errors), `mastra_model_total_input_tokens` /
`mastra_model_total_output_tokens` (one per model call) and `mastra_tool_duration_ms` (one per
tool call). Other metric names have no events here (workflows, cache tokens) and aggregate to
nothing. A filter on a dimension these events do not carry is refused rather than ignored, so a
number shown is never silently unfiltered.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from fastapi import APIRouter, Request
from opentelemetry.sdk.trace import ReadableSpan
from pydantic import BaseModel, ConfigDict, Field, field_validator

from sluicegate.server.deps import ERRORS
from sluicegate.server.errors import bad_request
from sluicegate.server.mastra.observability import SERVICE_NAME, failed, kept_runs

router = APIRouter(prefix="/api/observability/metrics", tags=["observability"], responses=ERRORS)

AGENT_DURATION = "mastra_agent_duration_ms"
INPUT_TOKENS = "mastra_model_total_input_tokens"
OUTPUT_TOKENS = "mastra_model_total_output_tokens"
TOOL_DURATION = "mastra_tool_duration_ms"
DIMENSIONS = (
    "name",
    "traceId",
    "entityType",
    "entityName",
    "status",
    "threadId",
    "resourceId",
    "model",
    "provider",
    "serviceName",
    "environment",
)

MEMBERSHIP = {"traceIds": "traceId"}
"""List filters: an event matches when its dimension is one of the values."""

Event = dict[str, Any]
"""`name`, `value`, `timestamp` (ns) and the `DIMENSIONS`."""


def _events(request: Request) -> list[Event]:
    events: list[Event] = []
    for run in kept_runs(request):
        base = {
            "traceId": run.trace_id,
            "entityType": "agent",
            "entityName": run.agent,
            "status": "error" if run.failed else "ok",
            "threadId": run.thread,
            "resourceId": run.resource,
            "model": None,
            "provider": None,
            "serviceName": SERVICE_NAME,
            "environment": None,
        }
        events.append(
            {
                **base,
                "name": AGENT_DURATION,
                "value": (run.ended - run.started) / 1e6,
                "timestamp": run.started,
            }
        )
        for span in run.spans:
            events.extend(_span_events(span, base))
    return events


def _span_events(span: ReadableSpan, base: dict[str, Any]) -> Iterable[Event]:
    attributes = span.attributes or {}
    start = span.start_time or 0
    if span.name.startswith("chat"):
        model = {
            **base,
            "model": attributes.get("gen_ai.request.model"),
            "provider": attributes.get("gen_ai.provider.name") or attributes.get("gen_ai.system"),
            "timestamp": start,
        }
        for key, name in (
            ("gen_ai.usage.input_tokens", INPUT_TOKENS),
            ("gen_ai.usage.output_tokens", OUTPUT_TOKENS),
        ):
            if key in attributes:
                yield {**model, "name": name, "value": float(attributes[key])}  # type: ignore[arg-type]
    elif span.name.startswith("execute_tool"):
        yield {
            **base,
            "name": TOOL_DURATION,
            "entityType": "tool",
            "entityName": attributes.get("gen_ai.tool.name")
            or span.name.removeprefix("execute_tool").strip(),
            "status": "error" if failed(span) else "ok",
            "value": ((span.end_time or start) - start) / 1e6,
            "timestamp": start,
        }


# ----------------------------------------------------------------------------- requests


class TimeWindow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    start: datetime | None = None
    end: datetime | None = None


class Filters(BaseModel):
    """A time window and equality on the dimensions the events carry."""

    model_config = ConfigDict(extra="allow")
    timestamp: TimeWindow | None = None


Aggregation = Literal["sum", "avg", "min", "max", "count", "last", "count_distinct"]


class _Query(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: list[str] = Field(min_length=1)
    aggregation: Aggregation
    distinctColumn: str | None = None
    filters: Filters | None = None

    @field_validator("name", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class AggregateBody(_Query):
    comparePeriod: Literal["previous_period", "previous_day", "previous_week"] | None = None


class BreakdownBody(_Query):
    groupBy: list[str] = Field(min_length=1)
    limit: int | None = Field(default=None, ge=1, le=1000)
    orderDirection: Literal["ASC", "DESC"] | None = None


_INTERVAL = re.compile(r"^(\d+)([smhd])$")


def _interval(value: str) -> timedelta:
    match = _INTERVAL.match(value)
    if not match or int(match.group(1)) == 0:
        raise bad_request("interval", "must be a positive number with s, m, h or d (`1h`)")
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[match.group(2)]
    return timedelta(**{unit: int(match.group(1))})


class TimeSeriesBody(_Query):
    interval: str
    groupBy: list[str] | None = None


class PercentilesBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    percentiles: list[float] = Field(min_length=1, max_length=20)
    interval: str
    filters: Filters | None = None


def _check_dimension(name: str, where: str) -> None:
    if name not in DIMENSIONS:
        raise bad_request(where, f"not a dimension of these metrics; choose from {', '.join(DIMENSIONS)}")


def _window(filters: Filters | None) -> tuple[float | None, float | None]:
    window = filters.timestamp if filters is not None else None
    if window is None:
        return None, None
    return (
        window.start.timestamp() * 1e9 if window.start else None,
        window.end.timestamp() * 1e9 if window.end else None,
    )


def _select(
    events: list[Event], names: list[str], filters: Filters | None, shift: float = 0.0
) -> list[Event]:
    """The events of `names` inside the filters' window (moved back by `shift` ns)."""
    start, end = _window(filters)
    equal = dict(filters.model_extra or {}) if filters is not None else {}
    among: dict[str, set[Any]] = {}
    for key in list(equal):
        if key in MEMBERSHIP:
            values = equal.pop(key)
            if not isinstance(values, list):
                raise bad_request(f"filters.{key}", "must be a list")
            among[MEMBERSHIP[key]] = set(values)
        else:
            _check_dimension(key, f"filters.{key}")
    chosen = []
    for event in events:
        if event["name"] not in names:
            continue
        stamp = event["timestamp"] + shift
        if (start is not None and stamp < start) or (end is not None and stamp > end):
            continue
        if all(event.get(k) == v for k, v in equal.items()) and all(
            event.get(k) in v for k, v in among.items()
        ):
            chosen.append(event)
    return chosen


def _aggregate(query: _Query, events: list[Event]) -> float | None:
    values = [e["value"] for e in events]
    kind = query.aggregation
    if kind == "count":
        return float(len(values))
    if kind == "count_distinct":
        if query.distinctColumn is None:
            raise bad_request("distinctColumn", "required when aggregation is 'count_distinct'")
        _check_dimension(query.distinctColumn, "distinctColumn")
        return float(
            len({e.get(query.distinctColumn) for e in events if e.get(query.distinctColumn) is not None})
        )
    if kind == "sum":
        return float(sum(values))
    if not values:
        return None
    pick: dict[str, Callable[[list[float]], float]] = {
        "avg": lambda v: sum(v) / len(v),
        "min": min,
        "max": max,
        "last": lambda v: v[-1],
    }
    return float(pick[kind](values))


# ----------------------------------------------------------------------------- routes


@router.post("/aggregate")
async def aggregate(body: AggregateBody, request: Request) -> dict[str, Any]:
    events = _events(request)
    value = _aggregate(body, _select(events, body.name, body.filters))
    answer: dict[str, Any] = {"value": value}
    if body.comparePeriod is not None:
        start, end = _window(body.filters)
        if body.comparePeriod == "previous_period":
            if start is None or end is None:
                raise bad_request(
                    "comparePeriod", "previous_period needs filters.timestamp with start and end"
                )
            shift = end - start
        else:
            shift = (1 if body.comparePeriod == "previous_day" else 7) * 86400e9
        previous = _aggregate(body, _select(events, body.name, body.filters, shift=shift))
        answer["previousValue"] = previous
        answer["changePercent"] = (
            (value - previous) / previous * 100 if value is not None and previous not in (None, 0) else None
        )
    return answer


@router.post("/breakdown")
async def breakdown(body: BreakdownBody, request: Request) -> dict[str, Any]:
    for i, key in enumerate(body.groupBy):
        _check_dimension(key, f"groupBy.{i}")
    groups: dict[tuple[Any, ...], list[Event]] = {}
    for event in _select(_events(request), body.name, body.filters):
        groups.setdefault(tuple(event.get(k) for k in body.groupBy), []).append(event)
    valued = [(_aggregate(body, members), key) for key, members in groups.items()]
    valued.sort(
        key=lambda row: row[0] if row[0] is not None else -math.inf, reverse=body.orderDirection != "ASC"
    )
    rows = [
        {"dimensions": dict(zip(body.groupBy, key, strict=True)), "value": value} for value, key in valued
    ]
    return {"groups": rows[: body.limit] if body.limit else rows}


def _buckets(events: list[Event], step: timedelta) -> dict[int, list[Event]]:
    width = step.total_seconds() * 1e9
    buckets: dict[int, list[Event]] = {}
    for event in events:
        buckets.setdefault(int(event["timestamp"] // width * width), []).append(event)
    return dict(sorted(buckets.items()))


def _stamp(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat().replace("+00:00", "Z")


@router.post("/timeseries")
async def timeseries(body: TimeSeriesBody, request: Request) -> dict[str, Any]:
    step = _interval(body.interval)
    for i, key in enumerate(body.groupBy or ()):
        _check_dimension(key, f"groupBy.{i}")
    series: dict[str, list[Event]] = {}
    for event in _select(_events(request), body.name, body.filters):
        label = "|".join(str(event.get(k)) for k in body.groupBy) if body.groupBy else event["name"]
        series.setdefault(label, []).append(event)
    return {
        "series": [
            {
                "name": label,
                "points": [
                    {"timestamp": _stamp(at), "value": _aggregate(body, members)}
                    for at, members in _buckets(events, step).items()
                ],
            }
            for label, events in series.items()
        ]
    }


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    rank = p * (len(ordered) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@router.post("/percentiles")
async def percentiles(body: PercentilesBody, request: Request) -> dict[str, Any]:
    step = _interval(body.interval)
    for i, p in enumerate(body.percentiles):
        if not 0 <= p <= 1:
            raise bad_request(f"percentiles.{i}", "must be between 0 and 1")
    buckets = _buckets(_select(_events(request), [body.name], body.filters), step)
    return {
        "series": [
            {
                "percentile": p,
                "points": [
                    {"timestamp": _stamp(at), "value": _percentile([e["value"] for e in members], p)}
                    for at, members in buckets.items()
                ],
            }
            for p in body.percentiles
        ]
    }
