"""Lead screens: cheap stdlib `re` tests that rule a `RegexRule` out of most streamed chunks
before the `regex` module's costlier partial search (see `guardrails.rule_matcher`)."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import regex

from sluicegate.guardrails import re_syntax
from sluicegate.guardrails.regex_rules import RegexRule

# Most rules can only start where something specific stands: a literal (`sk-`, `AKIA`, `https://`),
# a character class without letters (`\d`), or a short run of classes that holds one (an IBAN's
# `[A-Z]{2}\d{2}`, an IPv6 group's `[0-9a-f]{1,4}:`). From a rule's parse tree we derive stdlib
# `re` "leads" that match wherever a complete match, or a partial one running to the end of the
# text, could start: the first few characters a match begins with, or any beginning of them
# followed by the end of the text. One stdlib search over the new text then proves most chunks
# hold no match of those rules, far cheaper than the `regex` module's partial search. A lead may
# match where the rule cannot (it is only a screen) but never misses a place where the rule can.

_sre = re_syntax.parser
_sc = re_syntax.constants

_MAX_LEADS = 64
_MAX_ATOMS = 6
"""Characters a lead follows a match for: enough for `[0-9a-f]{4}:`; a longer lead prunes little more."""
_MAX_SPREAD = 3
"""A repeat of one class with at most this many more counts than its minimum (`{1,4}`) is
followed count by count, so what comes after it (`:`) joins the lead."""
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
_Atom = tuple[str, bool]
"""One character of a lead: a stdlib source matching it, and whether it is one fixed character."""
_Guard = tuple[str, bool]
"""The zero-width assertions before a lead (a stdlib source), and whether they mean that no
word character comes right before it (`\\b`, or a lookbehind such as `(?<![\\w:])`)."""
_Lead = tuple[_Guard, tuple[_Atom, ...]]
"""(its guard, the characters a match begins with)."""
_NO_GUARD: _Guard = ("", False)


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


def _atom(node: Any) -> _Atom | None:
    """`node` as one lead character, or None when it is not a single-character test."""
    op, av = node
    if op == _sc.LITERAL:
        return _char(av), True
    if op == _sc.NOT_LITERAL:
        return "[^" + _char(av) + "]", False
    if op == _sc.IN:
        cls = _render_class(av)
        return None if cls is None else (cls, False)
    return None


def _capped(leads: list[_Lead]) -> list[_Lead] | None:
    """`leads` without repeats, shortened (which only widens them) until at most `_MAX_LEADS`
    remain; None when even their first characters are too many."""
    width = _MAX_ATOMS
    while True:
        unique = list(dict.fromkeys((prefix, atoms[:width]) for prefix, atoms in leads))
        if len(unique) <= _MAX_LEADS:
            return unique
        if width == 1:
            return None
        width -= 1


def _then(prefix: _Guard, atoms: tuple[_Atom, ...], rest: list[Any]) -> list[_Lead]:
    """Leads for `atoms` followed by `rest`: extended by the characters `rest` starts with,
    as long as they are known (its assertions are dropped, which only widens the lead)."""
    if len(atoms) >= _MAX_ATOMS or not rest:
        return [(prefix, atoms[:_MAX_ATOMS])]
    tail = _leads(rest)
    if not tail:
        return [(prefix, atoms)]
    return _capped([(prefix, atoms + more) for _, more in tail]) or [(prefix, atoms)]


def _excludes_words(node: Any) -> bool:
    """Whether a negative lookbehind of `node` (one character) rules out every word character."""
    op, av = node
    return op == _sc.IN and (_sc.CATEGORY, _sc.CATEGORY_WORD) in av and (_sc.NEGATE, None) not in av


def _leads(seq: list[Any], prefix: _Guard = _NO_GUARD) -> list[_Lead] | None:
    """Where a match of `seq` can begin, or None when that is unknown (or it can be empty)."""
    i = 0
    while i < len(seq):
        op, av = seq[i]
        if op == _sc.AT:
            # A word boundary is kept (it prunes most); other anchors are dropped, which only widens.
            if av == _sc.AT_BOUNDARY:
                prefix = (prefix[0] + r"\b", True)
            elif av == _sc.AT_NON_BOUNDARY:
                prefix = (prefix[0] + r"\B", prefix[1])
            i += 1
            continue
        if op in (_sc.ASSERT, _sc.ASSERT_NOT):
            direction, sub = av
            body = _render_single(sub[0]) if direction == -1 and len(sub) == 1 else None
            if body is not None:  # a one-character lookbehind reads only text already there
                source = prefix[0] + ("(?<=" if op == _sc.ASSERT else "(?<!") + body + ")"
                prefix = (source, prefix[1] or (op == _sc.ASSERT_NOT and _excludes_words(sub[0])))
            i += 1
            continue
        rest = list(seq[i + 1 :])
        if op in (_sc.LITERAL, _sc.NOT_LITERAL, _sc.IN):
            atom = _atom(seq[i])
            return None if atom is None else _then(prefix, (atom,), rest)
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
            return _capped(out)
        if op in (_sc.MAX_REPEAT, _sc.MIN_REPEAT, _sc.POSSESSIVE_REPEAT):
            low, high, item = av
            if high == 0:
                i += 1
                continue
            single = _atom(item[0]) if len(item) == 1 and low >= 1 else None
            if single is not None:
                # A run of one class: `low` of it, then more of it or what follows, count by count.
                if low >= _MAX_ATOMS:
                    return [(prefix, (single,) * _MAX_ATOMS)]
                if high == low:
                    return _then(prefix, (single,) * low, rest)
                if high - low <= _MAX_SPREAD:
                    counts = range(low, high + 1)
                    return _capped([lead for n in counts for lead in _then(prefix, (single,) * n, rest)])
                return [(prefix, (single,) * low)]
            first = _leads(list(item), prefix)
            if first is None or low >= 1:
                return first
            after = _leads(rest, prefix)
            return None if after is None else _capped(first + after)
        return None
    return None


def _trie(tails: list[tuple[_Atom, ...]]) -> str:
    """What may follow a lead's first character, as one stdlib source: each of `tails`, or
    any beginning of one that runs to the end of the string. Tails sharing characters share
    them (`a(?:b|c|\\Z)`, not `a(?:b|\\Z)|a(?:c|\\Z)`), so stdlib tests each character once."""
    if any(not tail for tail in tails):
        return ""  # one lead ends here: the screen matches, whatever follows
    groups: dict[str, list[tuple[_Atom, ...]]] = {}
    for tail in tails:
        groups.setdefault(tail[0][0], []).append(tail[1:])
    return "(?:" + "".join(f"{source}{_trie(rest)}|" for source, rest in groups.items()) + "\\Z)"


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
    for _, atoms in leads:
        # A lead of letters only (`[A-Z]{2}`) matches all over prose; a fixed character or
        # one class without letters (`\d`, `:`) in it keeps it rare.
        if not any(
            literal or not re.compile(source, flags).search(string.ascii_letters) for source, literal in atoms
        ):
            return None
    return leads, flags


_EVERY_CHAR: list[str] = []


def _every_char() -> str:
    """Every character of the BMP, once, to test what a lead character matches."""
    if not _EVERY_CHAR:
        _EVERY_CHAR.append("".join(map(chr, range(0x10000))))
    return _EVERY_CHAR[0]


def _word_led(first: str, flags: int) -> bool:
    """Whether the lead character `first` (a stdlib source) matches word characters only."""
    return re.compile(f"(?={first})\\W", flags).search(_every_char()) is None


_UNCASED: dict[tuple[str, int], str] = {}


def _uncased(source: str, flags: int) -> str:
    """`source` (one character's test under `flags`) as a test that needs no IGNORECASE: the
    characters it then matches, listed (`a` as `[Aa]`, `s` as `[Ssſ]`). stdlib tests a plain
    character or class that begins an alternative before entering it; a case-blind one it
    enters at every position. A test whose cases are many, or may lie past the BMP, stays
    `(?i:...)`."""
    if not flags & re.IGNORECASE:
        return source
    known = _UNCASED.get((source, flags))
    if known is None:
        every = _every_char()
        chars = re.compile(source, flags).findall(every)
        if chars == re.compile(source, flags & ~re.IGNORECASE).findall(every):
            known = source
        elif len(chars) > 32 or any(ord(char) > 0xFFFF for char in source):
            known = f"(?i:{source})"
        else:
            known = "[" + "".join(map(re.escape, chars)) + "]"
        _UNCASED[(source, flags)] = known
    return known


def _render(leads: list[tuple[_Lead, int]], *, word_start: bool) -> str:
    """`leads` (each with its rule's stdlib flags) as one alternation. A case-blind lead's first
    character is listed in its cases and the rest of it scoped `(?i:...)`: case-blind leads
    (`api_key`, `https://`) join the others rather than sit in a scope stdlib must enter."""
    groups: dict[tuple[str, str, bool], list[tuple[_Atom, ...]]] = {}
    for ((prefix, _), atoms), flags in leads:
        if word_start and prefix == r"\b":
            prefix = ""  # the shared `(?<!\w)` before a word character says as much
        blind = bool(flags & re.IGNORECASE)
        groups.setdefault((prefix, _uncased(atoms[0][0], flags), blind), []).append(atoms[1:])
    rendered: list[str] = []
    for (prefix, first, blind), tails in groups.items():
        # Character first, its assertions as a lookbehind over it: every alternative then
        # begins with a plain character test, which stdlib checks before entering it, instead
        # of running each lead's assertions at every position.
        if blind and prefix:
            prefix = f"(?i:{prefix})"
        guard = f"(?<={prefix}{first})" if prefix else ""
        tail = _trie(tails)
        rendered.append(first + guard + (f"(?i:{tail})" if blind and tail else tail))
    return "|".join(rendered)


def _covers(wide: tuple[_Atom, ...], atoms: tuple[_Atom, ...], flags: int) -> bool:
    """Whether the characters `wide` matches begin every text `atoms` matches: atom by atom the
    same test, or a class holding the fixed character (`[\\d]` holds `0`)."""
    if len(wide) > len(atoms):
        return False
    for (source, _), (other, fixed) in zip(wide, atoms, strict=False):
        if source != other and not (fixed and re.fullmatch(source, re.sub(r"\\(.)", r"\1", other), flags)):
            return False
    return True


def _uncovered(leads: list[tuple[_Lead, int]]) -> list[tuple[_Lead, int]]:
    """`leads` without those another one matches wherever they do: a lead without assertions
    whose characters begin theirs (the phone's bare `\\d` covers every lead starting with `\\d`
    or a digit). The screen matches at the same places with fewer alternatives to try."""
    scope = re.IGNORECASE | re.ASCII
    bare = [(atoms, flags) for ((prefix, _), atoms), flags in leads if not prefix]
    kept: list[tuple[_Lead, int]] = []
    for lead, flags in leads:
        (prefix, _), atoms = lead
        covered = any(
            (prefix or wide != atoms[: len(wide)] or len(wide) < len(atoms))
            and (wide_flags & scope) == (flags & scope)
            and _covers(wide, atoms, flags & scope)
            for wide, wide_flags in bare
        )
        if not covered:
            kept.append((lead, flags))
    return kept


def screen(patterns: Iterable[regex.Pattern[str]]) -> str | None:
    """One stdlib `re` source matching wherever any of `patterns` could start a match
    (complete, or partial up to the end of the text), or None when one of them has no selective
    screen: it may start at any letter, uses syntax or flags of `regex` only, or can match empty.

    Leads that can only start a word (`\\b` or a lookbehind excluding word characters, before a
    word character: `\\bAKIA`, an IBAN, an IPv6 group) share one `(?<!\\w)` test, so inside a
    word stdlib tries none of them; the others are tried at every position."""
    leads: list[tuple[_Lead, int]] = []
    for pattern in patterns:
        selective = _selective_leads(pattern)
        if selective is None:
            return None
        found, flags = selective
        leads.extend((lead, flags) for lead in found)
    groups: dict[tuple[int, bool], list[tuple[_Lead, int]]] = {}
    for lead, flags in _uncovered(list(dict.fromkeys(leads))):
        word_start = lead[0][1] and _word_led(lead[1][0][0], flags)
        groups.setdefault((flags & re.ASCII, word_start), []).append((lead, flags))
    parts: list[str] = []
    for (flags, word_start), members in sorted(groups.items(), key=lambda item: not item[0][1]):
        body = _render(members, word_start=word_start)
        if word_start:
            body = f"(?<!\\w)(?:{body})"
        parts.append(_scope(body, flags) if flags else body)
    return "|".join(parts) if parts else None


def lead_screen(pattern: regex.Pattern[str]) -> str | None:
    """`screen([pattern])`: a stdlib `re` source matching wherever `pattern` could start a
    match, or None when no selective screen can be derived."""
    return screen([pattern])


def lead_initials(pattern: regex.Pattern[str]) -> str | None:
    """The first characters of `lead_screen(pattern)`'s matches, as a stdlib `re` source: a
    lead starts with one of them (its assertions take no width), and stdlib scans for a set of
    characters far faster than it tries each lead's assertions at every position."""
    selective = _selective_leads(pattern)
    if selective is None:
        return None
    leads, flags = selective
    initials = dict.fromkeys(atoms[0][0] for _, atoms in leads)
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
