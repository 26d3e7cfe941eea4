"""Tool-call arguments an output guard redacted for display only (`tool_arguments="shown"`):
people and stores see the redacted call (the client stream, approval cards, stored history,
spans) while the tool receives the model's own arguments.

The guard remembers, per call, what it showed and what it was given (`remember`, in its hook
state, so a suspended or durable run carries it); its `process_tool_call` puts back what it
redacted (`restore`). A value another processor changed after this guard stays as that
processor made it, so with `"rewritten"` further down the chain the tool still receives that
guard's redaction."""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

ToolArguments = Literal["shown", "rewritten"]
DEFAULT_TOOL_ARGUMENTS: ToolArguments = "shown"
_KEY = "tool_arguments_shown"


def check_tool_arguments(value: Any) -> ToolArguments:
    """`value` if it is a `tool_arguments` setting; a `ValueError` naming it otherwise."""
    choices = get_args(ToolArguments)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(
            f"tool_arguments must be 'shown' (the tool receives the model's arguments) or "
            f"'rewritten' (the tool receives the redacted ones), got {value!r}"
        )
    return value  # type: ignore[return-value]


def remember(state: dict[str, Any], call_id: str, shown: Any, original: Any) -> None:
    """A guard showed `shown` for the call `call_id` instead of `original` (what it was given).
    A call id seen twice before its tool ran (a model reusing ids) is ambiguous: neither call's
    tool gets arguments back (fail closed), so one call's values never reach another's tool."""
    record = state.setdefault(_KEY, {})
    record[call_id] = None if call_id in record else [shown, original]


def restore(state: dict[str, Any], call_id: str, current: Any) -> tuple[Any, bool]:
    """The arguments the tool receives for `call_id`: `current` with what this guard redacted
    put back; and whether anything was. The record stays until the step ends (`forget`): a tool
    that suspends runs again, with the same arguments, when it is resumed."""
    record = state.get(_KEY)
    entry = record.get(call_id) if record else None
    if entry is None:
        return current, False
    restored = _merge(current, entry[0], entry[1])
    return restored, restored is not current


def forget(state: dict[str, Any]) -> None:
    """The step is over (its tools ran): records not used by now are stale. Dropped, so a
    later step reusing a call id starts clean and the values are not kept longer than needed."""
    state.pop(_KEY, None)


def export(state: dict[str, Any]) -> dict[str, Any]:
    """The records a suspended run keeps (those that are JSON; the others are lost, and their
    calls' tools then receive the redacted arguments: fail closed)."""
    record = state.get(_KEY)
    if not record:
        return {}
    kept: dict[str, Any] = {}
    for call_id, entry in record.items():
        try:
            if json.loads(json.dumps(entry, allow_nan=False)) == entry:
                kept[call_id] = entry
        except (TypeError, ValueError):
            continue
    return {_KEY: kept} if kept else {}


def _merge(current: Any, shown: Any, original: Any) -> Any:
    """`current` with each part equal to what the guard showed replaced by what it was given;
    dicts and lists are matched position by position (a redacted key keeps its place)."""
    if current == shown and type(current) is type(shown):
        return original
    if isinstance(current, dict) and isinstance(shown, dict) and isinstance(original, dict):
        if not len(current) == len(shown) == len(original):
            return current
        out: dict[Any, Any] = {}
        changed = False
        for (key, value), (shown_key, shown_value), (original_key, original_value) in zip(
            current.items(), shown.items(), original.items(), strict=True
        ):
            new_key = original_key if key == shown_key else key
            new_value = _merge(value, shown_value, original_value)
            changed = changed or new_key is not key or new_value is not value
            out[new_key] = new_value
        return out if changed and len(out) == len(current) else current
    if isinstance(current, list) and isinstance(shown, list) and isinstance(original, list):
        if not len(current) == len(shown) == len(original):
            return current
        items = [_merge(c, s, o) for c, s, o in zip(current, shown, original, strict=True)]
        return items if any(n is not c for n, c in zip(items, current, strict=True)) else current
    return current
