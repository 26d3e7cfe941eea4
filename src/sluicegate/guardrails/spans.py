"""Where a verdict's findings sit in a text (`locate`), rewriting them (`substitute`), and the
strings inside structured values (tool arguments and results)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Finding(Protocol):
    """A located detection in a verdict: what it is, its text, where the model says it is."""

    @property
    def type(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


@dataclass(slots=True)
class Span:
    start: int
    end: int
    type: str


def locate(content: str, findings: Iterable[Finding]) -> list[Span]:
    """Where the findings sit in `content`, overlapping spans merged (the longest finding names
    the merged span). Every occurrence of a finding's value counts (models often miscount
    characters, and a value repeated in the text is just as sensitive), plus the model's own
    offsets when they point at the value. Each distinct value is searched for once: a text that
    repeats one value n times has n findings of it, and searching for each would be n² spans."""
    found: list[Span] = []
    searched: set[str] = set()
    for finding in findings:
        value = finding.value
        if 0 <= finding.start < finding.end <= len(content) and (
            not value or content[finding.start : finding.end] == value
        ):
            found.append(Span(finding.start, finding.end, finding.type))
        if value and value not in searched:
            searched.add(value)
            found.extend(
                Span(m.start(), m.end(), finding.type) for m in re.finditer(re.escape(value), content)
            )
    found.sort(key=lambda s: (s.start, s.start - s.end))
    merged: list[Span] = []
    longest = 0
    for span in found:
        if merged and span.start < merged[-1].end:
            current = merged[-1]
            if span.end - span.start > longest:
                current.type, longest = span.type, span.end - span.start
            current.end = max(current.end, span.end)
        else:
            merged.append(Span(span.start, span.end, span.type))
            longest = span.end - span.start
    return merged


def substitute(content: str, spans: Sequence[Span], replacement: Any) -> str:
    """`content` with each span replaced by `replacement(span_text, span_type)`."""
    out: list[str] = []
    cursor = 0
    for span in spans:
        out.append(content[cursor : span.start])
        out.append(replacement(content[span.start : span.end], span.type))
        cursor = span.end
    out.append(content[cursor:])
    return "".join(out)


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """`value` with every string inside it replaced by `fn(string)` (containers copied)."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {key: map_strings(item, fn) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(map_strings(item, fn) for item in value)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def value_texts(value: Any) -> list[str]:
    """Every text a structured value shows (tool arguments, tool results): its non-blank
    strings, its dict keys and its numbers, in order. A card number sent as a JSON number, or
    an address used as a key, is as sensitive as one inside a string."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if _is_number(value):
        return [str(value)]
    if isinstance(value, dict):
        texts: list[str] = []
        for key, item in value.items():
            if isinstance(key, str) and key.strip():
                texts.append(key)
            texts.extend(value_texts(item))
        return texts
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in value_texts(item)]
    return []


def map_texts(value: Any, fn: Callable[[str], str]) -> Any:
    """`value` with each of its `value_texts` replaced by `fn(text)`; `value` itself (the same
    object) when nothing changes. A number whose text changes becomes that string; a renamed
    key that clashes with another gets a numbered suffix, so no entry is lost. A `str`
    subclass (unparsed tool input) keeps its type and attributes."""
    if isinstance(value, str):
        if not value.strip():
            return value
        new = fn(value)
        if new == value:
            return value
        if type(value) is not str:
            marked = type(value)(new)
            marked.__dict__.update(getattr(value, "__dict__", {}))
            return marked
        return new
    if _is_number(value):
        text = str(value)
        new = fn(text)
        return value if new == text else new
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        changed = False
        for key, item in value.items():
            new_key = map_texts(key, fn) if isinstance(key, str) else key
            new_item = map_texts(item, fn)
            changed = changed or new_key is not key or new_item is not item
            if new_key is not key:
                base, n = new_key, 2
                while new_key in out or (new_key in value and new_key != key):
                    new_key, n = f"{base}_{n}", n + 1
            out[new_key] = new_item
        return out if changed else value
    if isinstance(value, (list, tuple)):
        items = [map_texts(item, fn) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    return value
