"""What guardrails report redacting, counted for the processor that is running.

A guardrail calls `redacted(kind)` wherever it replaces a finding. On a traced run the processor
runner (or the hook's span wrapper) makes a `RedactionSink` current for the hook it calls, and
the count lands on that processor's span; untraced, `redacted` is one context-variable read.
Nothing here knows OpenTelemetry, so processors may call it without loading the tracing glue.
"""

from __future__ import annotations

from contextvars import ContextVar, Token


class RedactionSink:
    """Counts by kind for the processor now running (`current`; None: none is counted)."""

    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current: dict[str, int] | None = None


_SINK: ContextVar[RedactionSink | None] = ContextVar("sluicegate_redactions", default=None)


def redacted(kind: str, count: int = 1) -> None:
    """Count `count` redactions of `kind` (a PII type, a rule's name) for the running hook."""
    sink = _SINK.get()
    if sink is None:
        return
    counts = sink.current
    if counts is not None:
        counts[kind] = counts.get(kind, 0) + count


def collect(sink: RedactionSink) -> Token[RedactionSink | None]:
    """Make `sink` current (undo with `release`)."""
    return _SINK.set(sink)


def release(token: Token[RedactionSink | None]) -> None:
    _SINK.reset(token)
