"""Reading exported spans back as a tree."""

from __future__ import annotations

from typing import Any

SHOWN = (
    "sluicegate.processor.id",
    "sluicegate.processor.phase",
    "sluicegate.processor.outcome",
    "sluicegate.step_number",
    "sluicegate.tripwire.reason",
    "sluicegate.tripwire.retry",
    "sluicegate.stream.chunks_seen",
    "sluicegate.stream.chunks_dropped",
    "sluicegate.stream.chunks_modified",
)


def children_of(spans: list[Any], parent: Any) -> list[Any]:
    parent_id = None if parent is None else parent.context.span_id
    found = [s for s in spans if (s.parent.span_id if s.parent is not None else None) == parent_id]
    return sorted(found, key=lambda s: s.start_time)


def outline(spans: list[Any], parent: Any = None) -> list[Any]:
    """[(name, {shown attributes}, [children...]), ...] in start order."""
    return [
        (
            span.name,
            {key: span.attributes[key] for key in SHOWN if key in span.attributes},
            outline(spans, span),
        )
        for span in children_of(spans, parent)
    ]


def by_name(spans: list[Any], name: str) -> list[Any]:
    return [s for s in spans if s.name == name]


def all_text(spans: list[Any]) -> str:
    """Everything a span exports that could hold content: names, attributes, events, status."""
    parts: list[str] = []
    for span in spans:
        parts.append(span.name)
        parts.extend(f"{k}={v}" for k, v in (span.attributes or {}).items())
        for event in span.events:
            parts.append(event.name)
            parts.extend(f"{k}={v}" for k, v in (event.attributes or {}).items())
        parts.append(str(span.status.description))
    return "\n".join(parts)
