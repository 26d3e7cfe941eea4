"""Exported spans as an indented text tree (for docs, tests and quick looks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def format_span_tree(spans: Sequence[Any], attributes: Sequence[str] = ()) -> str:
    """One line per span, children under their parent in start order, with the chosen
    attributes as `key=value` (short names: the part after `sluicegate.` or `gen_ai.`)."""
    ids = {span.context.span_id for span in spans}
    children: dict[int | None, list[Any]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: (s.start_time, s.name)):
            shown = [
                f"{_short(key)}={_value(span.attributes[key])}"
                for key in attributes
                if span.attributes is not None and key in span.attributes
            ]
            lines.append("  " * depth + span.name + (f"  [{' '.join(shown)}]" if shown else ""))
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)


def _short(key: str) -> str:
    for prefix in ("sluicegate.processor.", "sluicegate.", "gen_ai."):
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)
