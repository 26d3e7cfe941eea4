"""The hold-back of a pattern-matching stream: per channel (text, reasoning, each tool call's
streamed arguments), the text held while a match may still be forming and the markers held with
it."""

from __future__ import annotations

from collections.abc import Callable

from sluicegate.stream.chunk import Chunk, TextPayload, text_delta
from sluicegate.stream.payload import Payload

CONTEXT = 32
"""Characters of already-emitted text kept so lookbehinds and `\\b` see what precedes a chunk."""


class HoldBack:
    """One channel's hold-back (the text, the reasoning, or one tool call's streamed
    arguments), kept as one object in `args.state`."""

    __slots__ = ("carry", "carry_id", "carry_run_id", "context", "deferred", "make", "oversized", "scan_at")

    def __init__(self, make: Callable[[str, str, str], Chunk]) -> None:
        self.carry = ""
        """Held text: from where a match may still be forming to the end."""
        self.carry_id = ""
        self.carry_run_id = ""
        self.context = ""
        """Up to `CONTEXT` characters emitted just before `carry`, for lookbehinds and `\\b`."""
        self.deferred: list[Chunk] = []
        """`*-start`/`*-end` markers that arrived while text was held: they go out, in order,
        before the held text does, so a match spanning two text ids is still caught."""
        self.oversized = False
        self.scan_at = 0
        """Held length at which a hold longer than the carryover is searched again (0: each chunk)."""
        """A value longer than `max_value_chars` was withheld: drop the rest of it."""
        self.make = make
        """Builds this channel's delta chunk from (run id, id, text)."""


def reasoning_delta(run_id: str, id: str, text: str) -> Chunk:
    return Chunk("reasoning-delta", run_id, TextPayload(id, text))


def tool_input_delta(run_id: str, id: str, text: str) -> Chunk:
    return Chunk("tool-call-delta", run_id, Payload(tool_call_id=id, args_text_delta=text))


class HoldBacks:
    """Every channel's hold-back for one request."""

    __slots__ = ("all", "reasoning", "text")

    def __init__(self) -> None:
        self.text = HoldBack(text_delta)
        self.reasoning = HoldBack(reasoning_delta)
        self.all = (self.text, self.reasoning)
        """Both channels, for the per-chunk loops (built once, not per chunk). Tool-call
        arguments have their own per-value channels (`guardrails.argument_stream`)."""


MARKERS = {
    "text-start": "text",
    "text-end": "text",
    "reasoning-start": "reasoning",
    "reasoning-end": "reasoning",
}
