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
    offsets when they point at the value."""
    found: list[Span] = []
    for finding in findings:
        value = finding.value
        if 0 <= finding.start < finding.end <= len(content) and (
            not value or content[finding.start : finding.end] == value
        ):
            found.append(Span(finding.start, finding.end, finding.type))
        if value:
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


def string_leaves(value: Any) -> list[str]:
    """Every non-blank string inside `value` (through dicts, lists and tuples), in order."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in string_leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in string_leaves(item)]
    return []


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """`value` with every string inside it replaced by `fn(string)` (containers copied)."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {key: map_strings(item, fn) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(map_strings(item, fn) for item in value)
    return value
