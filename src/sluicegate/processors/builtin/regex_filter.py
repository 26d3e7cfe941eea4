"""`RegexFilter`: block, redact or flag text matching patterns (PII, secrets, URLs, your own),
in the input, the streamed output and the final result, with no model call.

Streaming never leaks a match split across chunks, yet holds back only what a match still in
progress needs: the `regex` package's partial matching tells where a match could still be
forming, and only the text from there on waits for the next chunk. Since that partial search is
costly, most rules are first ruled out per chunk by a stdlib "lead screen" (see `lead_screen`).
"""

from __future__ import annotations

import importlib
import logging
import re
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import regex

from sluicegate.messages import Message
from sluicegate.processors.args import (
    ProcessInputArgs,
    ProcessOutputResultArgs,
    ProcessOutputStreamArgs,
    ProcessToolResultArgs,
    ProcessToolResultResult,
)
from sluicegate.processors.base import Processor, notify_violation
from sluicegate.stream.chunk import Chunk, TextPayload, text_delta
from sluicegate.stream.payload import Payload

log = logging.getLogger(__name__)

Strategy = Literal["block", "redact", "warn"]
Phase = Literal["input", "output", "all"]
Preset = Literal["pii", "secrets", "urls"]

DEFAULT_REPLACEMENT = "[REDACTED]"
DEFAULT_CARRYOVER = 128
"""Characters the stream may hold back at most while a match is still forming (Mastra's default)."""
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
    accept a match for it to count (the credit-card preset checks Luhn).

    `tail` (optional, for patterns the stdlib `re` can also compile) speeds up streaming: a
    stdlib pattern, compiled with the rule's flags, that matches at a position exactly when the
    text from there to the end could still grow into a match, or already is one (the prefix
    closure of the rule's language, ending in `\\Z`). It must be exact: a tail that misses an
    in-progress match lets it leak in pieces; one that matches too much holds text back."""

    name: str
    pattern: str | re.Pattern[str] | regex.Pattern[str]
    replacement: str = DEFAULT_REPLACEMENT
    validate: Callable[[str], bool] | None = None
    flags: int = 0
    tail: str | None = None
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
            tail=value.get("tail"),
        )


PII_RULES: tuple[RegexRule, ...] = (
    RegexRule(
        "email",
        r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}",
        "[EMAIL]",
        # Every prefix of an address is a local part, or a local part, "@" and domain
        # characters ("." and letters are domain characters, so any domain prefix can still
        # end in ".xx"). Possessive, as neither class holds "@" and `\Z` allows nothing after.
        tail=r"[a-zA-Z0-9._%+-]++(?:@[a-zA-Z0-9.-]*+)?\Z",
    ),
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


# ---------------------------------------------------------------------- lead screens
#
# Most rules can only start where something specific stands: a literal (`sk-`, `AKIA`, `https://`)
# or a character class without letters (`\d`). From a rule's parse tree we derive a stdlib `re`
# "lead" that matches wherever a complete match, or a partial one running to the end of the
# text, could start: the literal prefix, or any beginning of it followed by the end of the text.
# One stdlib search over the new text then proves most chunks hold no match of those rules, far
# cheaper than the `regex` module's partial search. A lead may match where the rule cannot (it
# is only a screen) but never misses a place where the rule can.

_sre: Any = importlib.import_module("re._parser")
_sc: Any = importlib.import_module("re._constants")

_MAX_LEADS = 64
_ANALYSABLE_FLAGS = (
    regex.IGNORECASE | regex.MULTILINE | regex.DOTALL | regex.VERBOSE | regex.ASCII | regex.UNICODE | regex.V0
)
_CATEGORIES: dict[Any, str] = {
    _sc.CATEGORY_DIGIT: r"\d",
    _sc.CATEGORY_NOT_DIGIT: r"\D",
    _sc.CATEGORY_SPACE: r"\s",
    _sc.CATEGORY_NOT_SPACE: r"\S",
    _sc.CATEGORY_WORD: r"\w",
    _sc.CATEGORY_NOT_WORD: r"\W",
}
_Lead = tuple[str, str, bool]
"""(zero-width assertions before it, literal text or a rendered class, whether it is literal)."""


def _char(code: int) -> str:
    return re.escape(chr(code))


def _render_class(items: Any) -> str | None:
    out: list[str] = []
    for op, av in items:
        if op == _sc.NEGATE:
            out.append("^")
        elif op == _sc.LITERAL:
            out.append(_char(av))
        elif op == _sc.RANGE:
            out.append(f"{_char(av[0])}-{_char(av[1])}")
        elif op == _sc.CATEGORY and av in _CATEGORIES:
            out.append(_CATEGORIES[av])
        else:
            return None
    return "[" + "".join(out) + "]"


def _render_single(node: Any) -> str | None:
    op, av = node
    if op == _sc.LITERAL:
        return _char(av)
    if op == _sc.IN:
        return _render_class(av)
    return None


def _leads(seq: list[Any], prefix: str = "") -> list[_Lead] | None:
    """Where a match of `seq` can begin, or None when that is unknown (or it can be empty)."""
    i = 0
    while i < len(seq):
        op, av = seq[i]
        if op == _sc.AT:
            # A word boundary is kept (it prunes most); other anchors are dropped, which only widens.
            if av == _sc.AT_BOUNDARY:
                prefix += r"\b"
            elif av == _sc.AT_NON_BOUNDARY:
                prefix += r"\B"
            i += 1
            continue
        if op in (_sc.ASSERT, _sc.ASSERT_NOT):
            direction, sub = av
            body = _render_single(sub[0]) if direction == -1 and len(sub) == 1 else None
            if body is not None:  # a one-character lookbehind reads only text already there
                prefix += ("(?<=" if op == _sc.ASSERT else "(?<!") + body + ")"
            i += 1
            continue
        rest = list(seq[i + 1 :])
        if op == _sc.LITERAL:
            j = i
            while j < len(seq) and seq[j][0] == _sc.LITERAL:
                j += 1
            run = "".join(chr(seq[k][1]) for k in range(i, j))
            tail = _leads(list(seq[j:])) if j < len(seq) else None
            if tail and len(tail) <= _MAX_LEADS and all(lit and not pre for pre, _, lit in tail):
                return [(prefix, run + text, True) for _, text, _ in tail]
            return [(prefix, run, True)]
        if op == _sc.NOT_LITERAL:
            return [(prefix, "[^" + _char(av) + "]", False)]
        if op == _sc.IN:
            cls = _render_class(av)
            return None if cls is None else [(prefix, cls, False)]
        if op == _sc.SUBPATTERN:
            _, add_flags, del_flags, sub = av
            return None if add_flags or del_flags else _leads(list(sub) + rest, prefix)
        if op == _sc.ATOMIC_GROUP:
            return _leads(list(av) + rest, prefix)
        if op == _sc.BRANCH:
            out: list[_Lead] = []
            for item in av[1]:
                alternatives = _leads(list(item) + rest, prefix)
                if alternatives is None:
                    return None
                out.extend(alternatives)
            return out if len(out) <= _MAX_LEADS else None
        if op in (_sc.MAX_REPEAT, _sc.MIN_REPEAT, _sc.POSSESSIVE_REPEAT):
            low, high, item = av
            if high == 0:
                i += 1
                continue
            first = _leads(list(item), prefix)
            if first is None or low >= 1:
                return first
            after = _leads(rest, prefix)
            return None if after is None else first + after
        return None
    return None


def _nested_literal(text: str) -> str:
    """`text`, or any non-empty beginning of it that runs to the end of the string."""
    fragment = _char(ord(text[-1]))
    for char in reversed(text[:-1]):
        fragment = f"{_char(ord(char))}(?:{fragment}|\\Z)"
    return fragment


def _stdlib_flags(pattern: regex.Pattern[str]) -> int:
    flags = 0
    for regex_flag, re_flag in (
        (regex.IGNORECASE, re.IGNORECASE),
        (regex.MULTILINE, re.MULTILINE),
        (regex.DOTALL, re.DOTALL),
        (regex.VERBOSE, re.VERBOSE),
        (regex.ASCII, re.ASCII),
    ):
        if pattern.flags & regex_flag:
            flags |= re_flag
    return flags


def _parse(pattern: regex.Pattern[str]) -> tuple[Any, int] | None:
    """The stdlib parse tree of `pattern` and its stdlib flags, or None when stdlib cannot read it."""
    if pattern.flags & ~_ANALYSABLE_FLAGS:
        return None
    flags = _stdlib_flags(pattern)
    try:
        parsed = _sre.parse(pattern.pattern, flags)
    except (re.error, TypeError, ValueError, OverflowError, RecursionError):
        return None
    return parsed, flags | (parsed.state.flags & (re.IGNORECASE | re.ASCII))


def _scope(body: str, flags: int) -> str:
    scope = ("i" if flags & re.IGNORECASE else "") + ("a" if flags & re.ASCII else "")
    return f"(?{scope}:{body})" if scope else f"(?:{body})"


def _selective_leads(pattern: regex.Pattern[str]) -> tuple[list[_Lead], int] | None:
    parsed = _parse(pattern)
    if parsed is None:
        return None
    tree, flags = parsed
    leads = _leads(list(tree))
    if not leads:
        return None
    for _, text, literal in leads:
        if not literal and re.compile(text, flags).search(string.ascii_letters):
            return None  # could start at any letter: prose would hit it everywhere
    return list(dict.fromkeys(leads)), flags


def lead_screen(pattern: regex.Pattern[str]) -> str | None:
    """A stdlib `re` source matching wherever `pattern` could start a match (complete, or
    partial up to the end of the text), or None when no selective screen can be derived: the
    pattern may start at letters, uses syntax or flags of `regex` only, or can match empty.
    It is a bare alternation, so screens of several rules join into one flat alternation."""
    selective = _selective_leads(pattern)
    if selective is None:
        return None
    leads, flags = selective
    rendered: list[str] = []
    for prefix, text, literal in leads:
        # Character first, its assertions as a lookbehind over it: every alternative then
        # begins with a plain character test, which stdlib checks before entering it, instead
        # of running each lead's assertions at every position.
        first = _char(ord(text[0])) if literal else text
        guard = f"(?<={prefix}{first})" if prefix else ""
        rest = f"(?:{_nested_literal(text[1:])}|\\Z)" if literal and len(text) > 1 else ""
        rendered.append(first + guard + rest)
    if flags & (re.IGNORECASE | re.ASCII):
        # A case-blind first character gets no such check anyway; one scope keeps the
        # alternatives together, where stdlib factors out their common beginnings.
        return _scope("|".join(rendered), flags)
    return "|".join(rendered)


def lead_initials(pattern: regex.Pattern[str]) -> str | None:
    """The first characters of `lead_screen(pattern)`'s matches, as a stdlib `re` source: a
    lead starts with one of them (its assertions take no width), and stdlib scans for a set of
    characters far faster than it tries each lead's assertions at every position."""
    selective = _selective_leads(pattern)
    if selective is None:
        return None
    leads, flags = selective
    initials = dict.fromkeys(_char(ord(text[0])) if literal else text for _, text, literal in leads)
    return _scope("|".join(initials), flags)


def required_char(pattern: regex.Pattern[str]) -> str | None:
    """A character every match of `pattern` contains (a literal outside any group, repeat or
    case folding), or None: text without it holds no complete match."""
    parsed = _parse(pattern)
    if parsed is None:
        return None
    tree, flags = parsed
    for op, av in tree:
        if op == _sc.LITERAL:
            char = chr(av)
            if not flags & re.IGNORECASE or char.lower() == char.upper():
                return char
    return None


@dataclass(frozen=True, slots=True)
class _TailedRule:
    """A rule with a `tail`, compiled for stdlib: where a match may still be forming is found
    without the `regex` module's (costlier) partial search."""

    rule: RegexRule
    whole: re.Pattern[str]
    """The rule itself, for complete matches."""
    tail: re.Pattern[str]
    required: str | None
    """A character every complete match holds: without it, `whole` need not be searched."""

    @classmethod
    def of(cls, rule: RegexRule) -> _TailedRule | None:
        """None when stdlib cannot compile the rule as `regex` does (it stays on the generic path)."""
        if rule.tail is None or _parse(rule.compiled) is None:
            return None
        flags = _stdlib_flags(rule.compiled)
        try:
            return cls(
                rule,
                re.compile(rule.compiled.pattern, flags),
                re.compile(rule.tail, flags),
                required_char(rule.compiled),
            )
        except re.error:
            return None

    def hold_from(self, buffer: str, pos: int, size: int) -> int:
        """What `rule.compiled.search(buffer, pos, partial=True)` tells the stream: where a
        match may still be forming (`size`: nowhere), or -1 for a complete match ending before
        `size`. The leftmost place is where the tail first matches, unless a complete match
        starts before it, or at it (`regex` then reports the complete one)."""
        tail = self.tail.search(buffer, pos)
        start = size if tail is None else tail.start()
        if self.required is None or buffer.find(self.required, pos) >= 0:
            whole = self.whole.search(buffer, pos)
            if whole is not None and whole.start() <= start:
                return -1 if whole.end() < size else whole.start()
        return start


class _StreamState:
    """One channel's hold-back (the text, the reasoning, or one tool call's streamed
    arguments), kept as one object in `args.state`."""

    __slots__ = ("carry", "carry_id", "carry_run_id", "context", "deferred", "make")

    def __init__(self, make: Callable[[str, str, str], Chunk]) -> None:
        self.carry = ""
        """Held text: from where a match may still be forming to the end."""
        self.carry_id = ""
        self.carry_run_id = ""
        self.context = ""
        """Up to `_CONTEXT` characters emitted just before `carry`, for lookbehinds and `\\b`."""
        self.deferred: list[Chunk] = []
        """`*-start`/`*-end` markers that arrived while text was held: they go out, in order,
        before the held text does, so a match spanning two text ids is still caught."""
        self.make = make
        """Builds this channel's delta chunk from (run id, id, text)."""


def _reasoning_delta(run_id: str, id: str, text: str) -> Chunk:
    return Chunk("reasoning-delta", run_id, TextPayload(id, text))


def _tool_input_delta(run_id: str, id: str, text: str) -> Chunk:
    return Chunk("tool-call-delta", run_id, Payload(tool_call_id=id, args_text_delta=text))


class _Streams:
    """Every channel's hold-back for one request."""

    __slots__ = ("reasoning", "text", "tools")

    def __init__(self) -> None:
        self.text = _StreamState(text_delta)
        self.reasoning = _StreamState(_reasoning_delta)
        self.tools: dict[str, _StreamState] = {}

    def all(self) -> list[_StreamState]:
        return [self.text, self.reasoning, *self.tools.values()]


_MARKERS = {
    "text-start": "text",
    "text-end": "text",
    "reasoning-start": "reasoning",
    "reasoning-end": "reasoning",
}


_STATE_KEY = "regex_filter_stream"


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
    - `stream_carryover_size`: the most characters the stream holds back while a match may
      still be forming (default 128, as in Mastra): held text never waits longer than that, and
      a long unbroken token costs linear time. `None` holds exactly as long as a match needs.
    - `process_data_parts`: also check `data-*` chunks (on by default, unlike Mastra: what a
      tool writes to the client leaks as much as the answer; `False` opts out).

    Streaming covers every channel the client sees: text and reasoning deltas (a match split
    across chunks, or across two text ids, is held until it is settled), tool-call arguments as
    they stream and in the final `tool-call` chunk, `tool-result` payloads, and
    `data-*` chunks. What the stream releases is what the stored response holds.

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
        stream_carryover_size: int | None = DEFAULT_CARRYOVER,
        process_data_parts: bool = True,
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
        self._required = tuple((rule, required_char(rule.compiled)) for rule in self.rules)
        self.strategy: Strategy = strategy
        self.phase: Phase = phase
        self.include_redacted_values = include_redacted_values
        self.stream_carryover_size = stream_carryover_size
        if not isinstance(process_data_parts, bool):
            raise ValueError(f"process_data_parts must be True or False, got {process_data_parts!r}")
        self.process_data_parts = process_data_parts
        self.replacement_for: Callable[[str, RegexRule], str] | None = None
        """When set, what replaces a match (from its text and rule) instead of `rule.replacement`."""
        # One alternation of every rule (each keeping its own flags): its leftmost, possibly
        # partial, match tells in one call where the first possible match of any rule starts.
        self._any = regex.compile("|".join(_scoped(rule.compiled) for rule in self.rules))
        # The stream's fast path splits the rules: "tailed" ones (a `tail`, like emails, which
        # may start at any letter) are answered by stdlib searches alone; "screened" ones have
        # a lead (see `lead_screen`) and are all ruled out by one stdlib search, itself skipped
        # when no lead's first character appears; the rest each get a partial search.
        self._tailed = tuple(
            tailed for tailed in (_TailedRule.of(rule) for rule in self.rules if rule.tail) if tailed
        )
        tailed = {tailed.rule for tailed in self._tailed}
        leads = {rule: lead_screen(rule.compiled) for rule in self.rules if rule not in tailed}
        screened = [rule for rule, lead in leads.items() if lead is not None]
        initials = (
            re.compile("|".join(str(lead_initials(rule.compiled)) for rule in screened)) if screened else None
        )
        # Scanning for the leads' first characters first pays only where they are rare: not
        # when a lead may begin with a letter (`sk-`, `https`), as prose is full of those.
        self._screen_initials = (
            None if initials is None or initials.search(string.ascii_letters) else initials
        )
        self._screen = re.compile("|".join(str(leads[rule]) for rule in screened)) if screened else None
        self._screened_any = (
            regex.compile("|".join(_scoped(rule.compiled) for rule in screened)) if screened else None
        )
        self._unscreened = tuple(rule.compiled for rule, lead in leads.items() if lead is None)

    # ------------------------------------------------------------------ matching

    def find(self, text: str, pos: int = 0) -> list[tuple[int, int, RegexRule]]:
        """Every validated match of every rule in `text[pos:]`, as `(start, end, rule)`."""
        found: list[tuple[int, int, RegexRule]] = []
        for rule, required in self._required:
            if required is not None and text.find(required, pos) < 0:
                continue  # every match holds this character: none here
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
            replace = self.replacement_for
            out.append(
                region.rule.replacement
                if replace is None
                else replace(text[region.start : region.end], region.rule)
            )
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
        notify_violation(self, message, detail)  # an async callback is awaited in a task

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

    def process_tool_result(self, args: ProcessToolResultArgs) -> ProcessToolResultResult | None:
        """A tool's result, checked before the model, the history and the client see it."""
        if self.phase == "input":
            return None
        value, changed = self._scrub_value(args, args.result, "tool-result")
        return ProcessToolResultResult(value) if changed else None

    # ------------------------------------------------------------------ stream

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | list[Chunk] | None:
        part = args.part
        if self.phase == "input":
            return part
        streams = args.state.get(_STATE_KEY)
        if streams is None:
            streams = args.state[_STATE_KEY] = _Streams()
        kind = part.type
        if kind == "text-delta":
            channel = streams.text
            emitted = self._feed(args, channel, part, part.payload.text, None)
            if emitted is part or not channel.deferred:
                return emitted
            return self._with_deferred(channel, emitted)
        if kind == "reasoning-delta":
            return self._delta(args, streams.reasoning, part, part.payload.text)
        marker = _MARKERS.get(kind)
        if marker is not None:
            channel = streams.text if marker == "text" else streams.reasoning
            if channel.carry:
                channel.deferred.append(part)
                return None
            return part
        if kind == "tool-call-delta":
            call_id = str(part.payload.get("tool_call_id") or "")
            channel = streams.tools.get(call_id)
            if channel is None:
                channel = streams.tools[call_id] = _StreamState(_tool_input_delta)
            return self._delta(args, channel, part, part.payload.get("args_text_delta") or "", call_id)
        out: list[Chunk] = []
        if kind == "step-finish" and _abandoned(part):
            # The attempt was cut off: what is held may be half a secret (a card number the
            # failed attempt never finished). It is never settled as final: drop it, and let
            # only the held markers out.
            for channel in streams.all():
                channel.carry = channel.context = ""
                out.extend(channel.deferred)
                channel.deferred = []
            streams.tools.clear()
            out.append(part)
            return out[0] if len(out) == 1 else out
        for channel in streams.all():
            if channel.carry or channel.deferred:
                out.extend(self._flush(args, channel))
        streams.tools.clear()
        processed = self._structured(args, part)
        if processed is not None:
            out.append(processed)
        if not out:
            return None
        return out[0] if len(out) == 1 else out

    def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        """The end of a model step: every held channel is settled and released."""
        streams: _Streams | None = args.state.get(_STATE_KEY)
        if streams is None:
            return []
        out: list[Chunk] = []
        for channel in streams.all():
            if channel.carry or channel.deferred:
                out.extend(self._flush(args, channel))
        streams.tools.clear()
        return out

    def _delta(
        self,
        args: ProcessOutputStreamArgs,
        channel: _StreamState,
        part: Chunk,
        text: str,
        id: str | None = None,
    ) -> Chunk | list[Chunk] | None:
        emitted = self._feed(args, channel, part, text, id)
        if not channel.deferred or emitted is part:
            return emitted
        return self._with_deferred(channel, emitted)

    @staticmethod
    def _with_deferred(channel: _StreamState, emitted: Chunk | None) -> Chunk | list[Chunk] | None:
        """Markers held with the text go out before it once text is released."""
        if channel.carry and emitted is None:
            return None
        deferred = channel.deferred
        channel.deferred = []
        return [*deferred, emitted] if emitted is not None else deferred

    def _feed(
        self, args: ProcessOutputStreamArgs, stream: _StreamState, part: Chunk, text: str, id: str | None
    ) -> Chunk | None:
        """Add one delta; return what can be emitted now (None when all of it must wait)."""
        if not text:
            return part
        context = stream.context
        carry = stream.carry
        buffer = context + carry + text if (context or carry) else text
        pos = len(context)
        size = len(buffer)
        cut = self._hold_from(buffer, pos, size)
        regions: list[_Region] = []
        if cut < 0:  # a complete match: settle which matches are final, rule by rule
            cut, regions = self._settle(buffer, pos)
        elif cut == size and not carry:
            # Nothing can match or start anywhere in this chunk: it goes out as it is.
            stream.context = text[-_CONTEXT:] if len(text) >= _CONTEXT else buffer[-_CONTEXT:]
            return part
        cap = self.stream_carryover_size
        if cap is not None and size - cut > cap:
            # Held too long: all but the last `cap // 2` characters go out (a complete match
            # across that point is settled whole). Halving the hold means this settling search
            # runs once per `cap // 2` characters, not per chunk: bounded and linear.
            cut = size - cap // 2
            regions = _regions([m for m in self.find(buffer, pos) if m[0] < cut])
            for region in regions:
                if region.start < cut < region.end:
                    cut = region.end
        stream.carry = buffer[cut:]
        stream.carry_id = part.payload.id if id is None else id
        stream.carry_run_id = part.run_id
        stream.context = buffer[cut - _CONTEXT if cut > _CONTEXT else 0 : cut]
        if cut <= pos:
            return None
        return self._emit(args, stream, buffer, regions, pos, cut)

    def _hold_from(self, buffer: str, pos: int, size: int) -> int:
        """Where text that may still become part of a match begins (`size`: nowhere), or -1
        when `buffer[pos:]` holds a complete match that more text cannot change.

        The leftmost partial search of every rule at once tells the same, except that what
        starts after an earlier hold is left to the next chunk; found cheaply: rules with a tail
        cost stdlib searches only, the screened rules one stdlib search unless their lead
        appears, the others one partial search each."""
        cut = size
        for tailed in self._tailed:
            start = tailed.hold_from(buffer, pos, size)
            if start < cut:
                if start < 0:
                    return -1
                cut = start
        # Text from `cut` on waits anyway (and is searched again with what follows), so only
        # screened matches starting before it matter.
        screen = self._screen
        if screen is not None:
            initials = self._screen_initials
            if initials is not None:
                initial = initials.search(buffer, pos, cut)
                lead = None if initial is None else screen.search(buffer, initial.start(), cut)
            else:
                lead = screen.search(buffer, pos, cut)
            if lead is not None:
                first = self._screened_any.search(buffer, lead.start(), partial=True)  # type: ignore[union-attr]
                if first is not None:
                    # `regex` prefers a complete match anywhere to an earlier partial one: in
                    # "api_key=123-45-6789" it reports the SSN, not the key still forming
                    # before it. Only a partial answer is the leftmost; else settle rule by rule.
                    if not first.partial:
                        return -1
                    if first.start() < cut:
                        cut = first.start()
        for pattern in self._unscreened:
            first = pattern.search(buffer, pos, partial=True)
            if first is not None:
                if not first.partial and first.end() < size:
                    return -1
                if first.start() < cut:
                    cut = first.start()
        return cut

    def _settle(self, buffer: str, pos: int) -> tuple[int, list[_Region]]:
        """Where the settled text ends and the matches inside it: text from the first partial
        match (or a match that more text could extend) on must wait."""
        size = len(buffer)
        cut = size
        matches: list[tuple[int, int, RegexRule]] = []
        for rule in self.rules:
            for match in rule.compiled.finditer(buffer, pos, partial=True):
                start, end = match.span()
                # A complete match is final only if no longer match from its start could still
                # form: `regex` reports "john@ex.com" in "john@ex.com.a", yet the text may
                # continue to "john@ex.com.au".
                if match.partial or end == size or rule.compiled.fullmatch(buffer, start, partial=True):
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
        stream: _StreamState,
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
        return stream.make(stream.carry_run_id, stream.carry_id, text)

    def _flush(self, args: ProcessOutputStreamArgs, stream: _StreamState) -> list[Chunk]:
        """The held text, settled as final (the text run is over), after any deferred markers."""
        carry = stream.carry
        context = stream.context
        deferred = stream.deferred
        stream.carry = stream.context = ""
        stream.deferred = []
        if not carry:
            return deferred
        buffer = context + carry
        pos = len(context)
        regions = _regions(self.find(buffer, pos))
        emitted = self._emit(args, stream, buffer, regions, pos, len(buffer))
        if emitted is None:
            return deferred
        if all(marker.type.endswith("-end") for marker in deferred):
            return [emitted, *deferred]  # the held text belongs to the run that ended
        return [*deferred, emitted]

    # ------------------------------------------------------------------ whole values

    def _structured(self, args: ProcessOutputStreamArgs, part: Chunk) -> Chunk | None:
        """A chunk carrying a whole value the client sees (tool-call arguments, a tool
        result, `data-*` data unless opted out), with every string in it checked."""
        kind = part.type
        if kind == "tool-call":
            field_name = "args"
        elif kind == "tool-result":
            field_name = "result"
        elif kind.startswith("data-"):
            if not self.process_data_parts:
                return part
            value, changed = self._scrub_value(args, part.data, kind)
            return Chunk(kind, part.run_id, part.payload, value, part.from_) if changed else part
        else:
            return part
        payload = part.payload
        value, changed = self._scrub_value(args, payload.get(field_name), kind)
        if not changed:
            return part
        fields = dict(vars(payload))
        fields[field_name] = value
        return Chunk(kind, part.run_id, Payload(**fields), part.data, part.from_)

    def _scrub_value(self, args: Any, value: Any, where: str) -> tuple[Any, bool]:
        """`value` with every string in it (through dicts, lists and tuples) checked: redacted
        (the new value and True), or blocked/warned about (the value and False)."""
        if isinstance(value, str):
            regions = _regions(self.find(value))
            if not regions:
                return value, False
            if self.strategy != "redact":
                self._handle(args, value, regions, where, "process_output_stream")
                return value, False
            redactions: list[dict[str, Any]] = []
            redacted = self._apply(value, regions, 0, len(value), redactions)
            self._report_redactions("process_output_stream", redactions, {"chunk": where})
            if type(value) is not str:  # a str subclass (unparsed tool input) keeps its type
                marked = type(value)(redacted)
                marked.__dict__.update(getattr(value, "__dict__", {}))
                return marked, True
            return redacted, True
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            any_changed = False
            for key, item in value.items():
                out[key], changed = self._scrub_value(args, item, where)
                any_changed = any_changed or changed
            return (out, True) if any_changed else (value, False)
        if isinstance(value, (list, tuple)):
            items = [self._scrub_value(args, item, where) for item in value]
            if any(changed for _, changed in items):
                return type(value)(item for item, _ in items), True
            return value, False
        return value, False


def _abandoned(step_finish: Chunk) -> bool:
    """Whether a `step-finish` closes a step that failed (retried or errored) mid-answer."""
    step_result = step_finish.payload.get("step_result")
    reason = step_result.get("reason") if step_result is not None else None
    return reason in ("retry", "error")


RegexFilter = RegexFilterProcessor
"""Both names are exported, as in Mastra."""
