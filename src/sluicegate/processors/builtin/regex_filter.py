"""`RegexFilter`: block, redact or flag text matching patterns (PII, secrets, URLs, your own),
in the input, the streamed output and the final result, with no model call.

Streaming never leaks a match split across chunks, yet holds back only what a match still in
progress needs: the `regex` package's partial matching tells where a match could still be
forming, and only the text from there on waits for the next chunk.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import regex

from sluicegate.messages import Message
from sluicegate.processors.args import (
    ProcessInputArgs,
    ProcessorViolation,
    ProcessOutputResultArgs,
    ProcessOutputStreamArgs,
)
from sluicegate.processors.base import Processor
from sluicegate.stream.chunk import Chunk, text_delta

log = logging.getLogger(__name__)

Strategy = Literal["block", "redact", "warn"]
Phase = Literal["input", "output", "all"]
Preset = Literal["pii", "secrets", "urls"]

DEFAULT_REPLACEMENT = "[REDACTED]"
_CONTEXT = 32
"""Characters of already-emitted text kept so lookbehinds and `\\b` see what precedes a chunk."""


def luhn_valid(number: str) -> bool:
    """The Luhn checksum that every payment card number satisfies."""
    digits = [int(c) for c in number if c.isdigit()]
    if len(digits) < 12:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


_RE_TO_REGEX_FLAGS = (
    (re.IGNORECASE, regex.IGNORECASE),
    (re.MULTILINE, regex.MULTILINE),
    (re.DOTALL, regex.DOTALL),
    (re.VERBOSE, regex.VERBOSE),
    (re.ASCII, regex.ASCII),
)


def _compile(pattern: str | re.Pattern[str] | regex.Pattern[str], flags: int = 0) -> regex.Pattern[str]:
    if isinstance(pattern, regex.Pattern):
        return pattern
    if isinstance(pattern, re.Pattern):
        for re_flag, regex_flag in _RE_TO_REGEX_FLAGS:
            if pattern.flags & re_flag:
                flags |= regex_flag
        pattern = pattern.pattern
    return regex.compile(pattern, flags)


@dataclass(frozen=True)
class RegexRule:
    """One pattern: `name` for reports, `pattern` (a string or compiled pattern), the
    `replacement` used by the redact strategy, and an optional `validate(match_text)` that must
    accept a match for it to count (the credit-card preset checks Luhn)."""

    name: str
    pattern: str | re.Pattern[str] | regex.Pattern[str]
    replacement: str = DEFAULT_REPLACEMENT
    validate: Callable[[str], bool] | None = None
    flags: int = 0
    compiled: regex.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", _compile(self.pattern, self.flags))

    @classmethod
    def of(cls, value: RegexRule | Mapping[str, Any]) -> RegexRule:
        if isinstance(value, RegexRule):
            return value
        if not isinstance(value, Mapping) or "name" not in value or "pattern" not in value:
            raise ValueError(f"a rule needs a `name` and a `pattern`, got {value!r}")
        return cls(
            name=value["name"],
            pattern=value["pattern"],
            replacement=value.get("replacement") or DEFAULT_REPLACEMENT,
            validate=value.get("validate"),
            flags=value.get("flags", 0),
        )


PII_RULES: tuple[RegexRule, ...] = (
    RegexRule("email", r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}", "[EMAIL]"),
    RegexRule(
        "credit-card",
        r"\b(?:\d{4}[- ]?){3}\d{1,7}\b|\b\d{4}[- ]?\d{6}[- ]?\d{5}\b",
        "[CREDIT_CARD]",
        validate=luhn_valid,
    ),
    RegexRule("ssn", r"\b\d{3}-\d{2}-\d{4}\b", "[SSN]"),
    RegexRule("phone", r"(?<![\w+])(?:\+?1[-.\s]?)?(?:\(\d{3}\)|\d{3})[-.\s]?\d{3}[-.\s]?\d{4}\b", "[PHONE]"),
)
SECRET_RULES: tuple[RegexRule, ...] = (
    RegexRule(
        "api-key",
        r"(?:api[_-]?key|apikey|api[_-]?secret|access[_-]?token|secret[_-]?key)"
        r"\s*[:=]\s*[\"']?[a-zA-Z0-9_\-]{20,}[\"']?",
        "[API_KEY]",
        flags=regex.IGNORECASE,
    ),
    RegexRule(
        "bearer-token", r"\bBearer\s+[a-zA-Z0-9_\-.~+/]{8,}=*", "[BEARER_TOKEN]", flags=regex.IGNORECASE
    ),
    RegexRule("aws-key", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", "[AWS_KEY]"),
    RegexRule("openai-key", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}", "[API_KEY]"),
    RegexRule("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", "[API_KEY]"),
    RegexRule(
        "github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})", "[GITHUB_TOKEN]"
    ),
    RegexRule("slack-token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}", "[SLACK_TOKEN]"),
    RegexRule("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", "[API_KEY]"),
    RegexRule("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}", "[API_KEY]"),
    RegexRule("jwt", r"\beyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+", "[JWT]"),
    RegexRule(
        "private-key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        "[PRIVATE_KEY]",
    ),
)
URL_RULES: tuple[RegexRule, ...] = (
    RegexRule("url", r"https?://[^\s<>\"{}|\\^`\[\]]+", "[URL]", flags=regex.IGNORECASE),
)
PRESETS: dict[str, tuple[RegexRule, ...]] = {"pii": PII_RULES, "secrets": SECRET_RULES, "urls": URL_RULES}


_SCOPED_FLAGS = (
    (regex.IGNORECASE, "i"),
    (regex.MULTILINE, "m"),
    (regex.DOTALL, "s"),
    (regex.VERBOSE, "x"),
    (regex.ASCII, "a"),
)


_LEADING_FLAGS = regex.compile(r"^\(\?[aiLmsux]+\)")


def _scoped(pattern: regex.Pattern[str]) -> str:
    """`pattern` as a group that keeps its flags inside a larger alternation."""
    letters = "".join(letter for flag, letter in _SCOPED_FLAGS if pattern.flags & flag)
    source = _LEADING_FLAGS.sub("", pattern.pattern)  # already in pattern.flags
    return f"(?{letters}:{source})" if letters else f"(?:{source})"


@dataclass(slots=True)
class _Region:
    """A span to replace: the union of overlapping matches; the longest one names it."""

    start: int
    end: int
    rule: RegexRule
    length: int
    rules: list[str] | None = None


def _regions(matches: list[tuple[int, int, RegexRule]]) -> list[_Region]:
    matches.sort(key=lambda m: (m[0], m[0] - m[1]))
    regions: list[_Region] = []
    for start, end, rule in matches:
        current = regions[-1] if regions else None
        if current is not None and start < current.end:
            current.end = max(current.end, end)
            if current.rules is None:
                current.rules = [current.rule.name]
            current.rules.append(rule.name)
            if end - start > current.length:
                current.rule, current.length = rule, end - start
        else:
            regions.append(_Region(start, end, rule, end - start))
    return regions


class RegexFilterProcessor(Processor):
    """Pattern-based guardrail for input and output; no model call.

    - `rules`: your patterns, each a `RegexRule` or a dict with `name`, `pattern` (str or
      compiled) and optional `replacement` (default `[REDACTED]`).
    - `presets`: `"pii"` (emails, phone numbers, SSNs, Luhn-checked card numbers), `"secrets"`
      (API keys and tokens: OpenAI, Anthropic, AWS, GitHub, Slack, Google, Stripe, JWTs, bearer
      tokens, private keys, `api_key=...` assignments), `"urls"`.
    - `strategy`: `"block"` (default) aborts the run; `"redact"` replaces each match (overlapping
      matches are redacted as one span); `"warn"` passes text through and reports to
      `on_violation`.
    - `phase`: `"input"` (new input messages), `"output"` (stream and final messages), `"all"`.
    - `include_redacted_values`: put the matched text in reports (`on_violation` detail and the
      tripwire metadata); off by default, since it is the data being removed.
    - `stream_carryover_size`: an optional cap on how many characters the stream may hold back
      while a match is still forming; without it, text is held exactly as long as needed.

    Example::

        guard = RegexFilter(presets=["pii", "secrets"], strategy="redact", phase="output")
        guard.on_violation = lambda v: audit.log(v.detail)
        agent = Agent(name="a", model=model, output_processors=[guard])
    """

    id = "regex-filter"
    name = "Regex Filter"

    def __init__(
        self,
        *,
        rules: Iterable[RegexRule | Mapping[str, Any]] | None = None,
        presets: Iterable[Preset] | None = None,
        strategy: Strategy = "block",
        phase: Phase = "all",
        include_redacted_values: bool = False,
        stream_carryover_size: int | None = None,
    ) -> None:
        super().__init__()
        collected: list[RegexRule] = []
        for preset in presets or ():
            if preset not in PRESETS:
                raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
            collected.extend(PRESETS[preset])
        collected.extend(RegexRule.of(rule) for rule in rules or ())
        if not collected:
            raise ValueError("RegexFilter needs at least one rule or preset")
        if strategy not in ("block", "redact", "warn"):
            raise ValueError(f"strategy must be 'block', 'redact' or 'warn', got {strategy!r}")
        if phase not in ("input", "output", "all"):
            raise ValueError(f"phase must be 'input', 'output' or 'all', got {phase!r}")
        if stream_carryover_size is not None and stream_carryover_size < 1:
            raise ValueError("stream_carryover_size must be a positive number of characters")
        self.rules: tuple[RegexRule, ...] = tuple(collected)
        self.strategy: Strategy = strategy
        self.phase: Phase = phase
        self.include_redacted_values = include_redacted_values
        self.stream_carryover_size = stream_carryover_size
        # One alternation of every rule (each keeping its own flags): its leftmost, possibly
        # partial, match tells in one call where the first possible match of any rule starts.
        self._any = regex.compile("|".join(_scoped(rule.compiled) for rule in self.rules))

    # ------------------------------------------------------------------ matching

    def find(self, text: str, pos: int = 0) -> list[tuple[int, int, RegexRule]]:
        """Every validated match of every rule in `text[pos:]`, as `(start, end, rule)`."""
        found: list[tuple[int, int, RegexRule]] = []
        for rule in self.rules:
            for match in rule.compiled.finditer(text, pos):
                start, end = match.span()
                if end > start and (rule.validate is None or rule.validate(match.group())):
                    found.append((start, end, rule))
        return found

    def _apply(
        self, text: str, regions: list[_Region], start: int, end: int, redactions: list[dict[str, Any]] | None
    ) -> str:
        """`text[start:end]` with `regions` (inside it) replaced; offsets reported from `start`."""
        if not regions:
            return text[start:end]
        out: list[str] = []
        cursor = start
        for region in regions:
            out.append(text[cursor : region.start])
            out.append(region.rule.replacement)
            cursor = region.end
            if redactions is not None:
                entry: dict[str, Any] = {
                    "rule": region.rule.name,
                    "index": region.start - start,
                    "length": region.end - region.start,
                    "replacement": region.rule.replacement,
                }
                if region.rules is not None and len(set(region.rules)) > 1:
                    entry["overlapping_rules"] = sorted(set(region.rules))
                if self.include_redacted_values:
                    entry["value"] = text[region.start : region.end]
                redactions.append(entry)
        out.append(text[cursor:end])
        return "".join(out)

    def redact(self, text: str) -> str:
        """`text` with every match replaced: what the redact strategy makes of a whole text."""
        return self._apply(text, _regions(self.find(text)), 0, len(text), None)

    def _match_report(self, text: str, regions: list[_Region]) -> list[dict[str, Any]]:
        return [
            {
                "rule": r.rule.name,
                "index": r.start,
                "match": text[r.start : r.end] if self.include_redacted_values else "[REDACTED_MATCH]",
            }
            for r in regions
        ]

    # ------------------------------------------------------------------ reporting

    def _report(self, message: str, detail: dict[str, Any]) -> None:
        callback = self.on_violation
        if callback is None:
            return
        try:
            callback(ProcessorViolation(self.id, message, detail))
        except Exception:  # on_violation must never break the pipeline
            log.debug("on_violation of %s raised", self.id, exc_info=True)

    def _handle(
        self,
        args: Any,
        text: str,
        regions: list[_Region],
        where: str,
        phase: str,
        location: dict[str, Any] | None = None,
    ) -> None:
        """Block or warn about `regions` found in `text`."""
        names = ", ".join(dict.fromkeys(r.rule.name for r in regions))
        detail = {
            "strategy": self.strategy,
            "phase": phase,
            **(location or {}),
            "matches": self._match_report(text, regions),
        }
        if self.strategy == "block":
            args.abort(f"Regex filter: blocked {where} matching patterns: {names}", metadata=detail)
        log.warning("regex filter %s matched patterns: %s", self.id, names)
        self._report(f"Regex filter: matched patterns: {names}", detail)

    # ------------------------------------------------------------------ messages

    def _filter_messages(self, args: Any, messages: list[Message], phase: str) -> bool:
        """Check (and, for redact, rewrite in place) the text parts; whether any changed."""
        changed = False
        for message in messages:
            for index, part in enumerate(message.content.parts):
                text = part.get("text") if part.get("type") == "text" else None
                if not text:
                    continue
                regions = _regions(self.find(text))
                if not regions:
                    continue
                location = {"message_id": message.id, "part_index": index}
                if self.strategy != "redact":
                    self._handle(args, text, regions, "content", phase, location)
                    continue
                redactions: list[dict[str, Any]] = []
                part["text"] = self._apply(text, regions, 0, len(text), redactions)
                changed = True
                self._report_redactions(phase, redactions, location)
            if changed and message.content.parts:
                message.content.content = message.text
        return changed

    def _report_redactions(
        self, phase: str, redactions: list[dict[str, Any]], location: dict[str, Any] | None = None
    ) -> None:
        if redactions and self.on_violation is not None:
            names = ", ".join(dict.fromkeys(r["rule"] for r in redactions))
            self._report(
                f"Regex filter: redacted content matching patterns: {names}",
                {"strategy": "redact", "phase": phase, **(location or {}), "redactions": redactions},
            )

    def process_input(self, args: ProcessInputArgs) -> Any:
        if self.phase == "output":
            return None
        # Only this request's new input: remembered history was checked when it arrived.
        messages = args.message_list.get.input.db() if args.message_list is not None else args.messages
        self._filter_messages(args, messages, "process_input")
        return None

    def process_output_result(self, args: ProcessOutputResultArgs) -> Any:
        if self.phase == "input":
            return None
        self._filter_messages(args, args.message_list.get.response.db(), "process_output_result")
        return None

    # ------------------------------------------------------------------ stream

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | list[Chunk] | None:
        if self.phase == "input":
            return args.part
        part = args.part
        state = args.state
        if part.type == "text-delta":
            carry: str = state.get("carry", "")
            if carry and part.payload.id != state.get("carry_id"):
                flushed = self._flush(args)
                emitted = self._feed(args, part)
                return [*flushed, emitted] if emitted is not None else flushed
            return self._feed(args, part)
        if state.get("carry"):
            return [*self._flush(args), part]
        return part

    def _feed(self, args: ProcessOutputStreamArgs, part: Chunk) -> Chunk | None:
        """Add one delta; return what can be emitted now (None when all of it must wait)."""
        state = args.state
        text: str = part.payload.text
        if not text:
            return part
        context: str = state.get("context", "")
        carry: str = state.get("carry", "")
        buffer = context + carry + text if (context or carry) else text
        pos = len(context)
        first = self._any.search(buffer, pos, partial=True)
        if first is None and not carry:
            # Fast path: no pattern can match or start anywhere in this chunk.
            state["context"] = text[-_CONTEXT:] if len(text) >= _CONTEXT else (context + text)[-_CONTEXT:]
            return part
        size = len(buffer)
        if first is None:
            cut, regions = size, list[_Region]()
        elif first.partial or first.end() == size:
            cut, regions = first.start(), []  # nothing matches before the first possible match
        else:
            cut, regions = self._settle(buffer, pos)
        cap = self.stream_carryover_size
        if cap is not None and size - cut > cap:
            cut = size - cap
            regions = _regions([m for m in self.find(buffer, pos) if m[0] < cut])
            for region in regions:
                if region.start < cut < region.end:
                    cut = region.end
        state["carry"] = buffer[cut:]
        state["carry_id"] = part.payload.id
        state["carry_run_id"] = part.run_id
        state["context"] = buffer[max(0, cut - _CONTEXT) : cut]
        if cut <= pos:
            return None
        return self._emit(args, part, buffer, regions, pos, cut)

    def _settle(self, buffer: str, pos: int) -> tuple[int, list[_Region]]:
        """Where the settled text ends and the matches inside it: text from the first partial
        match (or a match touching the end, which more text could extend) on must wait."""
        size = len(buffer)
        cut = size
        matches: list[tuple[int, int, RegexRule]] = []
        for rule in self.rules:
            for match in rule.compiled.finditer(buffer, pos, partial=True):
                start, end = match.span()
                if match.partial or end == size:
                    cut = min(cut, start)
                    break
                if end > start and (rule.validate is None or rule.validate(match.group())):
                    matches.append((start, end, rule))
        regions = _regions([m for m in matches if m[0] < cut])
        for region in regions:
            if region.start < cut < region.end:
                cut = region.start
        return cut, [r for r in regions if r.end <= cut]

    def _emit(
        self,
        args: ProcessOutputStreamArgs,
        part: Chunk,
        buffer: str,
        regions: list[_Region],
        start: int,
        end: int,
    ) -> Chunk | None:
        if regions and self.strategy != "redact":
            self._handle(args, buffer, regions, "streaming content", "process_output_stream")
        if self.strategy == "redact":
            redactions: list[dict[str, Any]] | None = [] if self.on_violation is not None else None
            text = self._apply(buffer, regions, start, end, redactions)
            if redactions:
                self._report_redactions("process_output_stream", redactions)
        else:
            text = buffer[start:end]
        if not text:
            return None
        return text_delta(part.run_id, part.payload.id, text)

    def _flush(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        """The held text, settled as final (the text run is over)."""
        state = args.state
        carry: str = state.pop("carry", "")
        context: str = state.pop("context", "")
        if not carry:
            return []
        buffer = context + carry
        pos = len(context)
        regions = _regions(self.find(buffer, pos))
        placeholder = text_delta(state.get("carry_run_id", ""), state.get("carry_id", ""), "")
        emitted = self._emit(args, placeholder, buffer, regions, pos, len(buffer))
        return [emitted] if emitted is not None else []


RegexFilter = RegexFilterProcessor
"""Both names are exported, as in Mastra."""
