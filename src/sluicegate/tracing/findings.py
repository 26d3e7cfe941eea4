"""What guardrails report redacting, counted for the processor that is running.

A guardrail calls `redacted(kind)` wherever it replaces a finding. On a traced run the hook's
span wrapper makes a `RedactionSink` current for the hook it calls, and the count lands on that
processor's span; untraced, `redacted` is one context-variable read. In the per-chunk loop this
costs a context-variable switch per processor per chunk, so it is done only for processors
that declare `counts_redactions = True` (the built-in redacting guardrails do).
Nothing here knows OpenTelemetry, so processors may call it without loading the tracing glue.
"""

from __future__ import annotations

from contextvars import ContextVar, Token


class RedactionSink:
    """Counts by kind for the processor now running."""

    __slots__ = ("counts",)

    def __init__(self, counts: dict[str, int] | None = None) -> None:
        self.counts: dict[str, int] = {} if counts is None else counts


CURRENT_SINK: ContextVar[RedactionSink | None] = ContextVar("sluicegate_redactions", default=None)


def redacted(kind: str, count: int = 1) -> None:
    """Count `count` redactions of `kind` (a PII type, a rule's name) for the running hook."""
    sink = CURRENT_SINK.get()
    if sink is not None:
        counts = sink.counts
        counts[kind] = counts.get(kind, 0) + count


def collect(sink: RedactionSink) -> Token[RedactionSink | None]:
    """Make `sink` current (undo with `release`)."""
    return CURRENT_SINK.set(sink)


def release(token: Token[RedactionSink | None]) -> None:
    CURRENT_SINK.reset(token)
