"""Lead screens: cheap stdlib `re` tests that rule a `RegexRule` out of most streamed chunks
before the `regex` module's costlier partial search (see `guardrails.rule_matcher`)."""

from __future__ import annotations

import importlib
import re
import string
from dataclasses import dataclass
from typing import Any

import regex

from sluicegate.guardrails.regex_rules import RegexRule

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
class TailedRule:
    """A rule with a `tail`, compiled for stdlib: where a match may still be forming is found
    without the `regex` module's (costlier) partial search."""

    rule: RegexRule
    whole: re.Pattern[str]
    """The rule itself, for complete matches."""
    tail: re.Pattern[str]
    required: str | None
    """A character every complete match holds: without it, `whole` need not be searched."""

    @classmethod
    def of(cls, rule: RegexRule) -> TailedRule | None:
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
