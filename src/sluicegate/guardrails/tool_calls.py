"""The model's tool calls, for a guardrail that judges text with a detector: each call's
arguments are judged whole, once, when the call is complete, before it goes on to the client,
to a person asked to approve it, or to the tool. While the verdict is pending (a `vetted`
release), the call's streamed argument deltas are held, so a value is never released first."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sluicegate.guardrails.holdback import tool_input_delta
from sluicegate.guardrails.json_stream import lenient_text
from sluicegate.guardrails.message_checks import flagged_text
from sluicegate.guardrails.shown_arguments import remember
from sluicegate.guardrails.spans import Finding, locate, map_texts, substitute, value_texts
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.payload import Payload

log = logging.getLogger(__name__)

ARGUMENT_KINDS = frozenset({"tool-call-delta", "tool-call-input-streaming-end", "tool-call"})
"""The chunks that carry (or close) a tool call's arguments."""
_HELD_KEY = "tool_call_arguments_held"
_REFUSED_KEY = "tool_calls_refused"


@dataclass(frozen=True, slots=True)
class ToolCallJudge:
    """How one guardrail judges and acts on a tool call's arguments.

    `detect(text)` is its verdict on the arguments' texts (None: allowed through), `is_flagged`
    whether a verdict flags them, `act(verdict, abort)` enforces it (block raises, warn
    reports), `findings(verdict)` what to redact, `redact_value(value, type)` what replaces one.
    `strategy`: `"redact"` rewrites the arguments (for display only unless `tool_arguments`
    is `"rewritten"`), `"filter"` refuses the call (it goes on with its arguments cleared, and
    the guard's `process_tool_call` rejects it: `refusal_for`), anything else lets it through
    once acted on.
    `hold`: hold streamed argument deltas until the verdict."""

    detect: Callable[[str], Awaitable[Any]]
    is_flagged: Callable[[Any], bool]
    act: Callable[[Any, Any], None]
    findings: Callable[[Any], Sequence[Finding]]
    redact_value: Callable[[str, str], str]
    strategy: str
    hold: bool
    label: str
    tool_arguments: str = "shown"
    """`"shown"`: a redaction is for display; the tool receives the arguments as given (see
    `shown_arguments`). `"rewritten"`: the tool receives the redacted arguments too."""

    async def on_chunk(self, args: Any, part: Chunk) -> list[Chunk]:
        """What goes out for one tool-call chunk (`part` is one of `ARGUMENT_KINDS`)."""
        if part.type != "tool-call":
            if not self.hold:
                return [part]
            held: dict[str, list[Chunk]] = args.state.setdefault(_HELD_KEY, {})
            held.setdefault(str(part.payload.get("tool_call_id") or ""), []).append(part)
            return []
        held_parts = args.state.get(_HELD_KEY, {}).pop(str(part.payload.get("tool_call_id") or ""), [])
        arguments = part.payload.get("args")
        texts = value_texts(arguments)
        if isinstance(arguments, str) and (decoded := lenient_text(arguments)) != arguments:
            texts.append(decoded)  # unparsed input: judged with its escapes read too
        verdict = await flagged_text("\n".join(texts), self.detect, self.is_flagged)
        if verdict is None:
            return [*held_parts, part]
        self.act(verdict, args.abort)  # a block raises here: the call goes nowhere
        if self.strategy == "redact":
            redacted = self._redact(part, arguments, held_parts, verdict)
            if redacted is not None:
                if self.tool_arguments == "shown":
                    call_id = str(part.payload.get("tool_call_id") or "")
                    remember(args.state, call_id, redacted[-1].payload.args, arguments)
                return redacted
            log.warning(
                "[%s] a detection in tool-call arguments could not be located; dropping the call", self.label
            )
        elif self.strategy != "filter":
            return [*held_parts, part]
        # Refused, not dropped: the model reads why (a call that vanished leaves it answering
        # without knowing its tool never ran), and the flagged arguments go nowhere.
        call_id = str(part.payload.get("tool_call_id") or "")
        state_refusals = args.state.setdefault(_REFUSED_KEY, {})
        state_refusals[call_id] = (
            f"{self.label} flagged this call's arguments, so it was not run and its arguments are not "
            "shown; call it again without that content if the task still needs it."
        )
        fields = dict(vars(part.payload))
        fields["args"] = {}
        cleared = Chunk(part.type, part.run_id, Payload(**fields), part.data, part.from_)
        return [*(c for c in held_parts if c.type != "tool-call-delta"), cleared]

    def _redact(self, part: Chunk, arguments: Any, held: list[Chunk], verdict: Any) -> list[Chunk] | None:
        """The held parts and the call with every finding replaced; None when a finding is
        found nowhere in the arguments (the caller then drops the call: fail closed)."""
        findings = self.findings(verdict)
        located = False

        def redact_text(text: str) -> str:
            nonlocal located
            spans = locate(text, findings)
            located = located or bool(spans)
            return substitute(text, spans, self.redact_value) if spans else text

        new_arguments = map_texts(arguments, redact_text)
        if not located:
            return None
        out: list[Chunk] = []
        raw = "".join(c.payload.get("args_text_delta") or "" for c in held if c.type == "tool-call-delta")
        if raw:
            # The streamed text as one delta: the redacted arguments as JSON (redacting the raw
            # text instead could miss a value the JSON escaped), or the raw text redacted when
            # it never parsed.
            text = (
                new_arguments
                if isinstance(new_arguments, str)
                else json.dumps(new_arguments, ensure_ascii=False, default=str)
            )
            call_id = str(part.payload.get("tool_call_id") or "")
            out.append(tool_input_delta(part.run_id, call_id, text))
        out.extend(c for c in held if c.type != "tool-call-delta")
        fields = dict(vars(part.payload))
        fields["args"] = new_arguments
        out.append(Chunk(part.type, part.run_id, Payload(**fields), part.data, part.from_))
        return out


def refusal_for(state: dict[str, Any], call_id: str) -> str | None:
    """Why the stream hook refused the call `call_id` (strategy `"filter"`), or None."""
    refused = state.get(_REFUSED_KEY)
    reason = refused.get(call_id) if isinstance(refused, dict) else None
    return reason if isinstance(reason, str) else None


def drop_held(state: dict[str, Any]) -> None:
    """Forget held argument deltas whose call never completed (the step ended without it):
    unjudged, they are never released."""
    state.pop(_HELD_KEY, None)
