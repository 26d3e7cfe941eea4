"""Matching a set of `RegexRule`s, whole or as a stream: every validated match (`find`), where
a match may still be forming (`hold_from`), and which matches are final (`settle`). Overlapping
matches become one `Region`."""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from dataclasses import dataclass

import regex

from sluicegate.guardrails.lead_screen import TailedRule, lead_initials, lead_screen, required_char, screen
from sluicegate.guardrails.normalized import MAY_END_SPELLING, View, build_view, may_spell, spelled_email_hold
from sluicegate.guardrails.regex_rules import RegexRule

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
class Region:
    """A span to replace: the union of overlapping matches; the longest one names it."""

    start: int
    end: int
    rule: RegexRule
    length: int
    rules: list[str] | None = None


def merge_regions(matches: list[tuple[int, int, RegexRule]]) -> list[Region]:
    """`matches` as regions: overlapping ones merge, and the longest names the merged one."""
    matches.sort(key=lambda m: (m[0], m[0] - m[1]))
    regions: list[Region] = []
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
            regions.append(Region(start, end, rule, end - start))
    return regions


def compete(matches: list[tuple[int, int, RegexRule]], text: str) -> list[tuple[int, int, RegexRule]]:
    """`matches` with the values a run was split into competing across rules: where matches
    overlap, the set of non-overlapping ones covering the most text wins ("123-45-6789" and
    "4111 1111 1111 1111" beat the phone "123-45-6789 4111" across both). A losing split value
    stays only when it covers text the others leave (a value is never given up); matches of
    rules that do not split always stay (overlapping ones then merge into one region)."""
    if len(matches) < 2 or all(rule.split is None for _, _, rule in matches):
        return matches
    ordered = sorted(matches, key=lambda m: (m[0], m[1]))
    out: list[tuple[int, int, RegexRule]] = []
    cluster: list[tuple[int, int, RegexRule]] = []
    reach = -1
    for match in ordered:
        if cluster and match[0] >= reach:
            out.extend(_winners(cluster, text))
            cluster = []
        cluster.append(match)
        reach = max(reach, match[1]) if len(cluster) > 1 else match[1]
    out.extend(_winners(cluster, text))
    return out


def _winners(cluster: list[tuple[int, int, RegexRule]], text: str) -> list[tuple[int, int, RegexRule]]:
    """The matches of one cluster of overlapping ones that stay (see `compete`)."""
    if len(cluster) == 1 or all(rule.split is None for _, _, rule in cluster):
        return cluster
    by_end = sorted(cluster, key=lambda m: m[1])
    # weighted interval scheduling: best[k] = (covered, chosen) over the first k by end
    best: list[tuple[int, list[tuple[int, int, RegexRule]]]] = [(0, [])]
    for k, match in enumerate(by_end):
        before = k
        while before > 0 and by_end[before - 1][1] > match[0]:
            before -= 1
        take = best[before][0] + match[1] - match[0]
        best.append((take, [*best[before][1], match]) if take > best[k][0] else best[k])
    chosen = best[-1][1]
    kept = chosen + [m for m in cluster if m[2].split is None and m not in chosen]
    covered = {i for start, end, _ in kept for i in range(start, end)}
    for match in cluster:
        if match in kept:
            continue
        start, end, _ = match
        if any(i not in covered and not text[i].isspace() for i in range(start, end)):
            kept.append(match)
            covered.update(range(start, end))
    return kept


def _scan(rule: RegexRule, text: str, pos: int, *, partial: bool) -> Iterator[tuple[int, int, bool, bool]]:
    """`rule`'s matches in `text[pos:]` as `(start, end, partial, counts)`: whether each counts
    (non-empty, and complete and accepted by `rule.validate`). A candidate the check rejects is
    retried from its next character, so it cannot hide a valid value inside it (and whole texts
    and streams agree, wherever their scan starts); an accepted one is skipped whole, as
    `finditer` does. A rule with `split` reports the values it finds inside each complete match
    (or the match, not counting, when it holds none) and goes on after the match."""
    size = len(text)
    split = rule.split
    while pos <= size:
        match = rule.compiled.search(text, pos, partial=partial)
        if match is None:
            return
        start, end = match.span()
        if split is not None and end > start and not match.partial:
            if partial and (end == size or rule.compiled.fullmatch(text, start, partial=True)):
                yield start, end, True, False  # the run may still grow: its values are not known yet
                return
            found = split(match.group())
            for piece_start, piece_end in found:
                yield start + piece_start, start + piece_end, False, True
            if not found:
                yield start, end, False, False
            pos = end
            continue
        valid = end > start and not match.partial and (rule.validate is None or rule.validate(match.group()))
        yield start, end, match.partial, valid
        pos = end if valid or (rule.validate is None and end > start) else start + 1


_AN_ADDRESS = "reach jane.doe@example.com now"


class RuleMatcher:
    """A filter's rules, compiled for matching whole texts and streams."""

    def __init__(self, rules: tuple[RegexRule, ...]) -> None:
        self.rules = rules
        self._required = tuple((rule, required_char(rule.compiled)) for rule in self.rules)
        # One alternation of every rule (each keeping its own flags): its leftmost, possibly
        # partial, match tells in one call where the first possible match of any rule starts.
        self.any_rule = regex.compile("|".join(_scoped(rule.compiled) for rule in self.rules))
        # The stream's fast path splits the rules: "tailed" ones (a `tail`, like emails, which
        # may start at any letter) are answered by stdlib searches alone; "screened" ones have
        # a lead (see `lead_screen`) and are all ruled out by one stdlib search, itself skipped
        # when no lead's first character appears; the rest each get a partial search.
        self._tailed = tuple(
            tailed for tailed in (TailedRule.of(rule) for rule in self.rules if rule.tail) if tailed
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
        joint = screen([rule.compiled for rule in screened]) if screened else None
        self._screen = re.compile(joint) if joint is not None else None
        self._screened_any = (
            regex.compile("|".join(_scoped(rule.compiled) for rule in screened)) if screened else None
        )
        self._unscreened = tuple(rule.compiled for rule, lead in leads.items() if lead is None)
        # Whether a rule takes email addresses: then the view's spelled-out ones ("jane at ex
        # dot com") are held while they form, like a plain address's trailing word.
        self._emails = any(rule.compiled.search(_AN_ADDRESS) for rule in self.rules)

    def find(self, text: str, pos: int = 0) -> list[tuple[int, int, RegexRule]]:
        """Every validated match of every rule in `text[pos:]`, as `(start, end, rule)`: in the
        text and in its normalized view (see `normalized`), mapped back to the text."""
        found = compete(self._find(text, pos), text)
        view = build_view(text)
        if view is None:
            return found
        # The view's matches, and the text's own that no view match covers (a view match
        # often contains a piece of the same value: "ane@x.com" of "j\u200bane@x.com").
        seen = [
            (*view.origin(start, end), rule)
            for start, end, rule in compete(self._find(view.text, view.index(pos)), view.text)
        ]
        return seen + [m for m in found if not any(s < m[1] and m[0] < e for s, e, _ in seen)]

    def _find(self, text: str, pos: int) -> list[tuple[int, int, RegexRule]]:
        found: list[tuple[int, int, RegexRule]] = []
        for rule, required in self._required:
            if required is not None and text.find(required, pos) < 0:
                continue  # every match holds this character: none here
            for start, end, _, valid in _scan(rule, text, pos, partial=False):
                if valid:
                    found.append((start, end, rule))
        return found

    def hold_from(self, buffer: str, pos: int, size: int) -> int:
        """`_hold_from` on the buffer and, when it has anything to normalize, on its view."""
        cut = self._hold_from(buffer, pos, size)
        if cut < 0:
            return cut
        # The stream's hot path: most chunks end inside a word with no "at" near, and stop here.
        if self._emails and (buffer[-1] in MAY_END_SPELLING or may_spell(buffer, pos)):
            cut = min(cut, spelled_email_hold(buffer, pos))
        view = build_view(buffer)
        if view is None:
            return cut
        index = view.index(pos)
        at = self._hold_from(view.text, index, len(view.text))
        if at >= 0 and self._emails:
            at = min(at, spelled_email_hold(view.text, index))
        return -1 if at < 0 else min(cut, view.cut(at))

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
                lead = None if initial is None else _lead(screen, buffer, initial.start(), cut)
            elif screen.search(buffer, pos, cut) is None:
                lead = None  # the common chunk: no value can start in it (one call, no helper)
            else:
                lead = _lead(screen, buffer, pos, cut)
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
            if cut <= pos:
                break  # all of the new text waits already
            first = pattern.search(buffer, pos, partial=True)
            if first is not None:
                if not first.partial and first.end() < size:
                    return -1
                if first.start() < cut:
                    cut = first.start()
        return cut

    def settle(self, buffer: str, pos: int) -> tuple[int, list[Region]]:
        """Where the settled text ends and the matches inside it: text from the first partial
        match (or a match that more text could extend) on must wait; in the buffer and in its
        normalized view alike."""
        cut, regions = self._settle(buffer, pos)
        if self._emails:
            cut, regions = _before(spelled_email_hold(buffer, pos), cut, regions)
        view = build_view(buffer)
        if view is None:
            return cut, regions
        index = view.index(pos)
        at, found = self._settle(view.text, index)
        if self._emails:
            at, found = _before(spelled_email_hold(view.text, index), at, found)
        return _settle_both(cut, regions, view, at, found)

    def _settle(self, buffer: str, pos: int) -> tuple[int, list[Region]]:
        size = len(buffer)
        cut = size
        matches: list[tuple[int, int, RegexRule]] = []
        for rule in self.rules:
            for start, end, partial, valid in _scan(rule, buffer, pos, partial=True):
                # A complete match is final only if no longer match from its start could still
                # form: `regex` reports "john@ex.com" in "john@ex.com.a", yet the text may
                # continue to "john@ex.com.au". (A split match's values lie inside one run, which
                # the pieces' own checks below stand for.)
                if partial or end == size or rule.compiled.fullmatch(buffer, start, partial=True):
                    cut = min(cut, start)
                    break
                if valid:
                    matches.append((start, end, rule))
        regions = merge_regions(compete([m for m in matches if m[0] < cut], buffer))
        for region in regions:
            if region.start < cut < region.end:
                cut = region.start
        return cut, [r for r in regions if r.end <= cut]


def _lead(screen: re.Pattern[str], buffer: str, pos: int, cut: int) -> re.Match[str] | None:
    """The first lead of `screen` starting in `buffer[pos:cut]`. Searched up to `cut` (cheap),
    but a lead reaching `cut` is matched again against the whole buffer: its end-of-text test
    means the text's end, not `cut` (a long token released past its bound would otherwise be
    searched again at every chunk)."""
    while (lead := screen.search(buffer, pos, cut)) is not None:
        if lead.end() < cut or cut == len(buffer) or screen.match(buffer, lead.start()) is not None:
            return lead
        pos = lead.start() + 1
    return None


def _before(hold: int, cut: int, regions: list[Region]) -> tuple[int, list[Region]]:
    """`cut` and `regions` with text from `hold` on waiting too."""
    if hold >= cut:
        return cut, regions
    for region in regions:
        if region.start < hold < region.end:
            hold = region.start
    return hold, [r for r in regions if r.end <= hold]


def _settle_both(
    cut: int, regions: list[Region], view: View, at: int, found: list[Region]
) -> tuple[int, list[Region]]:
    """The settled end and regions of a buffer from those of the buffer and of its view."""
    cut = min(cut, view.cut(at))
    matches = [(r.start, r.end, r.rule) for r in regions]
    matches.extend((*view.origin(r.start, r.end), r.rule) for r in found)
    merged = merge_regions(matches)
    for region in merged:
        if region.start < cut < region.end:
            cut = region.start
    return cut, [r for r in merged if r.end <= cut]
