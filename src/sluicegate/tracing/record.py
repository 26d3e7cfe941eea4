"""What goes on a span: values as compact JSON attributes, errors as the span's status, and
`TracingContext`, the span a processor hook runs in."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode

from sluicegate.tracing import attributes as attr


@dataclass(frozen=True)
class TracingContext:
    """What processors get as `args.tracing_context`: the span they run in and the trace id."""

    current_span: Span
    trace_id: str


def to_json(value: Any) -> str:
    """A compact JSON string for a span attribute (objects it cannot encode become strings)."""
    try:
        return json.dumps(value, default=_encode, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


def _encode(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return model_dump(mode="json")
    return str(value)


def set_error(span: Span, error: Any) -> None:
    """Mark a span failed with the error's type and message (errors are not content)."""
    name = type(error).__name__ if isinstance(error, BaseException) else "Error"
    span.set_status(Status(StatusCode.ERROR, f"{name}: {error}"))
    span.set_attribute(attr.ERROR_TYPE, name)
