"""A tool call's streamed arguments judged on what they decode to: each string (key or value)
is a text channel of its own, its decoded characters held while a match may still be forming
and released re-encoded; each number is judged once complete (also written out in full); the
structure between them goes out as it comes. A call whose text stops being JSON is held from
there and judged whole at its end (fail closed).

What the client receives decodes to what was judged: `jane.doe\\u0040example.com` is judged as
`jane.doe@example.com`, and a value's start is never released while the value may still be
one to redact or block."""

from __future__ import annotations

from typing import Any, Protocol

from sluicegate.guardrails.holdback import HoldBack, tool_input_delta
from sluicegate.guardrails.json_stream import (
    CLOSE,
    MALFORMED,
    NUMBER,
    OPEN,
    RAW,
    TEXT,
    JsonTokens,
    encode_text,
)
from sluicegate.stream.chunk import Chunk


class ArgumentJudge(Protocol):
    """What a pattern guard offers to judge argument values (see `RegexFilter`)."""

    def feed_value_text(self, args: Any, channel: HoldBack, part: Chunk, text: str, id: str) -> Chunk | None:
        """Decoded string text added to `channel`: what can be released now (a delta whose
        text is already encoded), or None while all of it waits."""
        ...

    def settle_value_text(self, args: Any, channel: HoldBack) -> list[Chunk]:
        """The string ended: what `channel` still holds, settled as final."""
        ...

    def judge_number(self, args: Any, token: str) -> str:
        """The JSON to send for a complete number token (itself, or a redacted string)."""
        ...

    def judge_malformed(self, args: Any, context: str, held: str, raw: str) -> str:
        """What to send of the held end of arguments that stopped being JSON: `held` (the open
        string's held decoded text, after `context`, already sent) then `raw`; judged with
        `raw`'s escapes read too. An empty string drops it."""
        ...


def _encoded_delta(run_id: str, id: str, text: str) -> Chunk:
    return tool_input_delta(run_id, id, encode_text(text))


class ArgumentStream:
    """One tool call's streamed arguments, as a guard releases them."""

    __slots__ = ("channel", "malformed", "tokens")

    def __init__(self) -> None:
        self.tokens = JsonTokens()
        self.channel = HoldBack(_encoded_delta)
        self.malformed: list[str] = []
        """Raw text held since the arguments stopped being JSON (joined once, at the end)."""

    def feed(self, judge: ArgumentJudge, args: Any, run_id: str, call_id: str, text: str) -> str:
        """The text to send for one delta (possibly empty: it all waits)."""
        return self._events(judge, args, run_id, call_id, self.tokens.feed(text))

    def finish(self, judge: ArgumentJudge, args: Any, run_id: str, call_id: str) -> str:
        """The call's arguments are complete: what is still held, judged and settled."""
        out = self._events(judge, args, run_id, call_id, self.tokens.finish())
        if not self.tokens.malformed:
            return out
        channel = self.channel
        context, held = channel.context, channel.carry
        channel.carry = channel.context = ""
        raw = "".join(self.malformed)
        self.malformed = []
        return out + judge.judge_malformed(args, context, held, raw)

    def _events(self, judge: ArgumentJudge, args: Any, run_id: str, call_id: str, events: list[Any]) -> str:
        out: list[str] = []
        channel = self.channel
        for kind, value in events:
            if kind == RAW:
                out.append(value)
            elif kind == TEXT:
                released = judge.feed_value_text(
                    args, channel, _encoded_delta(run_id, call_id, value), value, call_id
                )
                if released is not None:
                    out.append(released.payload.args_text_delta)
            elif kind == OPEN:
                channel.carry_id, channel.carry_run_id = call_id, run_id
                out.append('"')
            elif kind == CLOSE:
                out.extend(c.payload.args_text_delta for c in judge.settle_value_text(args, channel))
                out.append('"')
            elif kind == NUMBER:
                out.append(judge.judge_number(args, value))
            elif kind == MALFORMED:
                self.malformed.append(value)
        return "".join(out)
