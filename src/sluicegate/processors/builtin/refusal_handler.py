"""`RefusalHandler`: ask a model once more, with a rephrasing instruction, after a policy refusal.

Provider safety classifiers refuse ordinary work now and then (a false positive partway through
a long loop is common) and a nudge usually gets past them. Mastra's `CyberRefusalHandler` does
this for cyber-security refusals only; this one treats any policy refusal the same way. It
retries once per run: a second refusal is taken as meant and passes through unchanged.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from sluicegate.errors import ConfigurationError
from sluicegate.messages import Message, MessageContent, Part
from sluicegate.processors.args import ProcessAPIErrorArgs, ProcessAPIErrorResult, ProcessOutputStepArgs
from sluicegate.processors.base import Processor

log = logging.getLogger(__name__)

DEFAULT_INSTRUCTION = (
    "it was a refusal. If the request has a legitimate reading, answer that reading now in "
    "neutral, factual wording, leaving out only what you truly cannot provide; if nothing of it "
    "can be answered, say so in one sentence and offer a safe alternative"
)
"""The retry's instruction. An output-step retry reaches the model as the loop's processor
feedback ("Your previous response was not accepted: <instruction>. Please try again ...")."""

DEFAULT_FINISH_REASONS: tuple[str, ...] = ("content-filter", "refusal")
"""`content-filter` is what the adapters map Anthropic's `refusal` stop reason, OpenAI's
`content_filter` and Gemini's `SAFETY`-family reasons to; `refusal` covers models that report
the raw reason."""

DEFAULT_ERROR_CODES: tuple[str, ...] = (
    "content_policy_violation",
    "content_filter",
    "cyber_policy",
    "responsibleaipolicyviolation",
)
"""Provider error codes that mean "refused by policy" (OpenAI, Azure OpenAI, OpenAI's cyber
safeguard, Azure's inner error code); compared case-insensitively."""

DEFAULT_TEXT_PATTERN = re.compile(
    r"""^\s*
    (?:(?:(?:i['’]?m\s+)?sorry|i\s+apologi[sz]e|unfortunately)[,.!]?\s*(?:but\s*,?\s*)?)?
    i\b\s*(?:
        (?:must|have\s+to|need\s+to)\s+decline\b
      | (?:can(?:no|['’])t|can\s+not|won['’]?t|will\s+not|(?:am|['’]m)\s+(?:not\s+able|unable)\s+to)
        (?:\s+(?:help|assist|comply|provide|do|fulfil+|support|answer|engage|create|write|generate
               |share|give|continue)\b
          | \s*(?:that|this)?\s*[.!]?\s*$)
    )""",
    re.IGNORECASE | re.VERBOSE,
)
"""A refusal as the answer's opening words: "I can't help with that", "Sorry, but I cannot
assist", "I'm unable to comply", "I must decline that request". Anchored at the start so an
answer that mentions a limit further on ("... but I can't guarantee it") is not a refusal."""

DEFAULT_MAX_REFUSAL_CHARS = 400
"""Text longer than this is an answer, not a refusal, whatever its first words."""

REMINDER_TYPE = "refusal-handler-retry"
_RETRIED = "retried"


def _records(value: Any) -> Iterable[dict[str, Any]]:
    """`value` and the dicts nested under its `error`/`response`/`innererror` keys."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if not isinstance(item, dict) or id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        stack.extend(item.get(key) for key in ("error", "response", "innererror", "inner_error"))


def _codes(error: BaseException) -> set[str]:
    """Every error code the exception, its payload and its causes carry, lower-cased."""
    codes: set[str] = set()
    current: BaseException | None = error
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        payloads: list[Any] = [getattr(current, "data", None)]
        body = getattr(current, "response_body", None)
        if isinstance(body, str):
            try:
                payloads.append(json.loads(body))
            except ValueError:
                pass
        code = getattr(current, "code", None)
        if isinstance(code, str):
            codes.add(code.lower())
        for payload in payloads:
            for record in _records(payload):
                for key in ("code", "type"):
                    if isinstance(record.get(key), str):
                        codes.add(record[key].lower())
        cause = getattr(current, "cause", None)
        current = cause if isinstance(cause, BaseException) else current.__cause__
    return codes


def _patterns(value: Any) -> tuple[re.Pattern[str], ...]:
    if value is None:
        return (DEFAULT_TEXT_PATTERN,)
    if isinstance(value, (str, re.Pattern)) or not isinstance(value, Sequence):
        raise ConfigurationError(
            f"RefusalHandler: text_patterns must be a list of regexes (strings or compiled), got {value!r}"
        )
    patterns = []
    for item in value:
        if isinstance(item, re.Pattern):
            patterns.append(item)
        elif isinstance(item, str):
            try:
                patterns.append(re.compile(item, re.IGNORECASE))
            except re.error as exc:
                raise ConfigurationError(
                    f"RefusalHandler: text_patterns has a bad regex {item!r}: {exc}"
                ) from exc
        else:
            raise ConfigurationError(f"RefusalHandler: text_patterns holds {item!r}, not a regex")
    return tuple(patterns)


def _strings(name: str, value: Any) -> tuple[str, ...]:
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not all(isinstance(v, str) for v in value)
    ):
        raise ConfigurationError(f"RefusalHandler: {name} must be a list of strings, got {value!r}")
    return tuple(value)


class RefusalHandler(Processor):
    """Retries a refused step once, telling the model to rephrase its answer.

    What counts as a refusal (deterministic, no model call):

    - a step that finished with a reason in `finish_reasons` (`content-filter`, `refusal`);
    - a step whose whole text, at most `max_refusal_chars` long and with no tool calls, matches
      one of `text_patterns` (default: a refusal as the opening words, `DEFAULT_TEXT_PATTERN`;
      pass `text_patterns=[]` to trust finish reasons only);
    - a provider error whose code (on the error, in its JSON body, nested `error` objects or its
      causes) is one of `error_codes`.

    A refused step is rejected with `abort(instruction, retry=True)`: the loop discards it and
    runs the step again with the instruction as processor feedback. A refused call is retried
    with the instruction appended as a `<system-reminder>` user message (kept in the history,
    metadata `systemReminder.type == "refusal-handler-retry"`), as `PrefillErrorHandler` does.
    Only one retry per run, whichever lane asks first; afterwards a refusal is the answer.

    Register it as an output processor (answers) and as an error processor (provider errors):
    an output-step retry needs a retry budget, which `max_processor_retries` sets and any error
    processor turns on (10), otherwise the loop ends the run with a tripwire instead. List it
    before `StreamErrorRetryProcessor`, which would resend the unchanged request.

    ```python
    from sluicegate import Agent
    from sluicegate.processors import RefusalHandler

    refusals = RefusalHandler()
    agent = Agent(name="a", instructions="...", model="anthropic/claude-sonnet-4-5",
                  output_processors=[refusals], error_processors=[refusals])
    ```
    """

    id = "refusal-handler"
    name = "Refusal Handler"

    def __init__(
        self,
        *,
        instruction: str = DEFAULT_INSTRUCTION,
        finish_reasons: Sequence[str] = DEFAULT_FINISH_REASONS,
        text_patterns: Sequence[str | re.Pattern[str]] | None = None,
        max_refusal_chars: int = DEFAULT_MAX_REFUSAL_CHARS,
        error_codes: Sequence[str] = DEFAULT_ERROR_CODES,
    ) -> None:
        super().__init__()
        if not isinstance(instruction, str) or not instruction.strip():
            raise ConfigurationError(
                f"RefusalHandler: instruction must be a non-empty string, got {instruction!r}"
            )
        if (
            isinstance(max_refusal_chars, bool)
            or not isinstance(max_refusal_chars, int)
            or max_refusal_chars < 1
        ):
            raise ConfigurationError(
                f"RefusalHandler: max_refusal_chars must be a positive integer, got {max_refusal_chars!r}"
            )
        self.instruction = instruction
        self.finish_reasons = frozenset(_strings("finish_reasons", finish_reasons))
        self.text_patterns = _patterns(text_patterns)
        self.max_refusal_chars = max_refusal_chars
        self.error_codes = frozenset(code.lower() for code in _strings("error_codes", error_codes))

    def refusal_kind(self, finish_reason: str | None, text: str, has_tool_calls: bool) -> str | None:
        """Why a finished step is a refusal (`"finish-reason"`, `"text"`), or None."""
        if finish_reason is not None and finish_reason in self.finish_reasons:
            return "finish-reason"
        stripped = text.strip()
        if has_tool_calls or not stripped or len(stripped) > self.max_refusal_chars:
            return None
        if any(pattern.search(stripped) for pattern in self.text_patterns):
            return "text"
        return None

    def is_refusal_error(self, error: BaseException | None) -> bool:
        return error is not None and not self.error_codes.isdisjoint(_codes(error))

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        if args.state.get(_RETRIED):
            return
        kind = self.refusal_kind(args.finish_reason, args.text, bool(args.tool_calls))
        if kind is None:
            return
        args.state[_RETRIED] = True
        log.info("RefusalHandler: step %d was a refusal (%s); retrying once", args.step_number, kind)
        args.abort(
            self.instruction,
            retry=True,
            metadata={"refusal": kind, "finish_reason": args.finish_reason},
        )

    def process_api_error(self, args: ProcessAPIErrorArgs) -> ProcessAPIErrorResult | None:
        if args.state.get(_RETRIED) or not self.is_refusal_error(args.error):
            return None
        args.state[_RETRIED] = True
        log.info("RefusalHandler: the provider refused step %d by policy; retrying once", args.step_number)
        text = f"<system-reminder>{self.instruction}</system-reminder>"
        reminder = Message(
            role="user",
            content=MessageContent(
                parts=[Part(type="text", text=text)],
                content=text,
                metadata={"systemReminder": {"type": REMINDER_TYPE}},
            ),
        )
        args.message_list.add(reminder, "input")
        return ProcessAPIErrorResult(retry=True)
