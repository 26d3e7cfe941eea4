"""What a windowed guardrail decides about one window of streamed text, and the options that
size its windows (see `guardrails.windows`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from sluicegate.guardrails.spans import Span

Release = Literal["vetted", "optimistic"]

DEFAULT_WINDOW_CHARS = 400
DEFAULT_OVERLAP_CHARS = 128
DEFAULT_MAX_HOLD_MS = 500.0
DEFAULT_MAX_VALUE_CHARS = 8192
"""The longest value (a run of text without whitespace) a window holds back whole while it is
still being written; a longer one is redacted whole (see `guardrails.windows`)."""


@dataclass(slots=True)
class Judgement:
    """What a guardrail decided about one window: `flagged`, and for a flagged window either
    `drop` (withhold its text) or `spans` (positions in the window's text) to rewrite with
    `replace(value, type)`. Blocking is done by raising `TripWire` from the judge."""

    flagged: bool = False
    spans: list[Span] = field(default_factory=list)
    drop: bool = False
    replace: Callable[[str, str], str] | None = None
    reason: str = ""


def redaction_judgement(
    strategy: str, spans: Callable[[], list[Span]], replace: Callable[[str, str], str], reason: str
) -> Judgement:
    """A flagged window's judgement for a redacting guardrail: `"warn"` lets it through,
    `"filter"` (or a redaction whose `spans()` cannot be located) withholds it, and otherwise
    the spans are rewritten with `replace`."""
    if strategy == "warn":
        return Judgement(flagged=True, reason=reason)
    located = spans()
    if strategy == "filter" or not located:
        return Judgement(flagged=True, drop=True, reason=reason)
    return Judgement(flagged=True, spans=located, replace=replace, reason=reason)


Judge = Callable[[str, Any], Awaitable[Judgement]]
"""`judge(window_text, args)`: the guardrail's verdict on one window (`args` are the stream
hook's arguments: `abort`, `message_list`, ...)."""


def check_window_options(
    window_chars: int,
    overlap_chars: int,
    max_hold_ms: float,
    release: str,
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
) -> None:
    if not isinstance(window_chars, int) or window_chars < 1:
        raise ValueError(f"window_chars must be a positive number of characters, got {window_chars!r}")
    if not isinstance(overlap_chars, int) or not 0 <= overlap_chars < window_chars:
        raise ValueError(f"overlap_chars must be 0 or more and below window_chars, got {overlap_chars!r}")
    if max_hold_ms <= 0:
        raise ValueError(f"max_hold_ms must be positive, got {max_hold_ms!r}")
    if isinstance(max_value_chars, bool) or not isinstance(max_value_chars, int) or max_value_chars < 1:
        raise ValueError(f"max_value_chars must be a positive number of characters, got {max_value_chars!r}")
    if release not in ("vetted", "optimistic"):
        raise ValueError(f"release must be 'vetted' or 'optimistic', got {release!r}")
