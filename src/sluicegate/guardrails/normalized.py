"""The normalized view a pattern guard matches as well as the text itself, so evasions do not
hide a value: NFKC (fullwidth and other look-alike forms), format characters removed (zero-width
space, joiners, word joiner, BOM), separators between single digits collapsed ("4 1 1 1 ..."),
spelled-out `at`/`dot` in email shapes. Each view character remembers the span of original
characters it came from, so a match found in the view replaces the original characters,
invisible ones included. Look-alike letters (Cyrillic `а`, Greek `ο`) beside ASCII ones fold to
the letters they imitate (see `confusables`)."""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass

import regex

from sluicegate.guardrails.confusables import near_ascii
from sluicegate.guardrails.confusables import table as confusable_table
from sluicegate.guardrails.validators import iban_valid

_FORMAT = regex.compile(r"\p{Cf}")
_SEP = r"[ .\-\u00a0]{1,3}"
# After a first digit: it starts no word, unless after an escaped newline or tab (`\\n`, as
# JSON strings hold them). (Digit first, so stdlib scans for digits before testing more.)
_START = r"(?:(?<!\w\d)|(?<=\\[nrt]\d))"
# Single digits each split by a short separator run (an evasion: groups of several digits are
# what the rules themselves accept), unless part of a longer list ("1 2 3 ... 9 10"); or such
# digits, or a separator after a digit, at the very end (a stream may continue them).
_SPLIT_DIGITS = re.compile(
    rf"\d{_START}(?:{_SEP}\d(?!\d)){{3,}}(?!{_SEP}\d)(?:{_SEP}\Z)?|\d{_START}(?:{_SEP}\d(?!\d))*(?:{_SEP})?\Z"
)
# A phone number's country code before an area code, or an area code in parentheses, with its
# digits split ("+4 1 (0)", "(7-3)"): too short for a run above, collapsed when a number follows.
_SPLIT_PHONE_PREFIX = re.compile(r"\+\d(?:[ .\-]\d){1,2}(?=[ .\-]?\()|\((?:\d[ .\-]){1,4}\d\)(?=[ .\-]?\d)")
_SEPARATOR = re.compile(_SEP)
# An IBAN with a space or dash between any characters ("GB3 4QIRA1 8 4 5 ..."): country, check
# digits and 11 to 30 more; or the beginning of one at the very end (a stream may continue it).
_SPLIT_IBAN = re.compile(
    r"(?<![\w-])[A-Z][ \-]?[A-Z](?:[ \-]?\d){2}(?:[ \-]?[A-Z0-9]){11,30}(?:[ \-]?\Z)?"
    r"|(?<![\w-])[A-Z]{2}(?:[ \-]?\d(?:[ \-]?\d(?:[ \-]?[A-Z0-9]){0,30})?)?[ \-]?\Z"
)
# What a split IBAN, or the beginning of one at the end, holds that a plain one does not: its
# check digits split, a group of one to three characters between separators, or a separator
# at the very end.
_IBAN_HINT = re.compile(
    r"[A-Z](?:[ \-]?[A-Z]\d?[ \-]\d|[A-Z]\d\d[ \-]?[A-Z0-9]{1,4}[ \-][A-Z0-9]{1,3}[ \-]"
    r"|[A-Z](?:[ \-]?\d(?:[ \-]?\d(?:[ \-]?[A-Z0-9]){0,30})?)?[ \-]\Z)"
)
_IBAN_SEPARATOR = re.compile(r"[ .\-]")
_AT = r"(?:\s*[\[(<{]\s*at\s*[\])>}]\s*|\s+at\s+)"
_DOT = r"(?:\s*[\[(<{]\s*dot\s*[\])>}]\s*|\s+dot\s+)"
_TLD = (
    r"(?:com|org|net|edu|gov|mil|int|io|co|uk|us|ca|au|de|fr|nl|es|it|ch|se|jp|in|info|biz|me|ai|dev|app"
    r"|hu|pl|cz|sk|at|be|dk|fi|no|pt|gr|ie|nz|za|br|mx|ar|ru|ua|ro|bg|hr|si|tr|il|sg|hk|tw|cn|kr|eu|lt"
    r"|lv|ee|lu|cl|ph|my|id|th|vn|ng|ae|tv|cc|xyz|online|site|tech|shop|email)"
)
# An "@" or "." with whitespace beside it, inside an address written to evade ("jane @ ex . com").
_SPACED_AT = r"(?:[ \t]+@[ \t]*|@[ \t]+)"
_SPACED_DOT = r"(?:[ \t]+\.[ \t]*|\.[ \t]+)"
_LOCAL = r"[A-Za-z0-9._%+-]+(?:" + _DOT + r"[A-Za-z0-9._%+-]+)*"
_DOMAIN = rf"[A-Za-z0-9-]+(?:(?:{_DOT}|{_SPACED_DOT}|\.)[A-Za-z0-9-]+)*"
# An address with a spelled-out "at" and at least one spelled-out "dot", a bracketed "[at]", or
# a spaced "@"; its local part may spell its dots out too ("jane dot doe at ...", "jane (dot)
# doe [at] ..."): a stream holds "jane dot" while it may begin one (`spelled_email_hold`).
_SPELLED_EMAIL = re.compile(
    rf"{_LOCAL}(?:{_AT}{_DOMAIN}{_DOT}{_TLD}"
    rf"|\s*[\[(<{{]\s*at\s*[\])>}}]\s*{_DOMAIN}(?:{_DOT}|\.){_TLD}"
    rf"|(?:{_SPACED_AT}|@){_DOMAIN}(?:{_DOT}|{_SPACED_DOT}|\.){_TLD})\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(rf"(?P<at>{_AT}|{_SPACED_AT})|(?P<dot>{_DOT}|{_SPACED_DOT})", re.IGNORECASE)
# The beginning of a spelled-out address, at the very end of a stream's text: a local part and
# what may begin its "at" ("jane ", "jane a", "jane [at", "jane @ "), or a local part, its "at"
# and what may begin its domain ("jane at ex", "jane at ex dot", "jane (at) ex [dot] c",
# "jane @ ex . c").
_LOCAL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")
_AT_BEGINS = re.compile(r"[A-Za-z0-9._%+-](?:\s+(?:at?)?|\s*@\s*|\s*[\[(<{]\s*(?:at?\s*)?)\Z", re.IGNORECASE)
_AT_TOKEN = re.compile(r"[A-Za-z0-9._%+-](?:\s+at\s+|\s*@\s*|\s*[\[(<{]\s*at\s*[\])>}]\s*)", re.IGNORECASE)
_DOMAIN_BEGINS = re.compile(
    r"[A-Za-z0-9-]*(?:(?:\s+dot\s+|\s*[\[(<{]\s*dot\s*[\])>}]\s*|[ \t]*\.[ \t]*)[A-Za-z0-9-]*)*"
    r"(?:\s+(?:d|do|dot)?|\s*[\[(<{]\s*(?:(?:d|do|dot)\s*)?|[ \t]*\.[ \t]*)?",
    re.IGNORECASE,
)
# A local part, then what may begin a spelled-out "dot" at the very end ("jane d", "jane dot",
# "jane (dot) "): the address may go on with the rest of its local part.
_DOT_BEGINS = re.compile(
    r"[A-Za-z0-9._%+-](?:\s+(?:do?t?)\s*|\s*[\[(<{]\s*(?:do?t?\s*[\])>}]?)?\s*)\Z", re.IGNORECASE
)
# A local part and a spelled-out "dot" right before a position: a dotted local part goes on there.
_DOT_BEFORE = re.compile(rf"[A-Za-z0-9._%+-]{_DOT}\Z", re.IGNORECASE)
# An "at" or a "dot" (the first character a class: stdlib scans for it before testing more).
AN_AT = re.compile("[aAdD](?:(?<=[aA])[tT]|(?<=[dD])[oO][tT])")
_SPACE_OR_BRACKET = frozenset(" \t\n\r\f\v[(<{")
MAY_END_SPELLING = _SPACE_OR_BRACKET | {"a", "A"}
"""Last characters after which `spelled_email_hold` may hold text with no "at", "dot" or "@"
in it ("jane ", "jane a", "jane ["): with `may_spell`, the stream's cheap first test."""
_DOT_ENDINGS = tuple(f"{before}{word}" for before in " \t\n([{<" for word in ("d", "do", "D", "Do", "DO"))


def may_spell(text: str, pos: int) -> bool:
    """Whether `text[pos:]` holds an "at", a "dot" or an "@", or ends in what may begin a "dot"
    (" d", "(do"): a spelled-out or spaced address may be forming. One scan for the words and
    one for "@", cheaper than one search for either."""
    return (
        AN_AT.search(text, pos) is not None
        or text.find("@", pos) >= 0
        or (text[-1] in "dDoO" and text.endswith(_DOT_ENDINGS))
    )


_SPELLED_REACH = 256
"""How far back from the end a spelled-out address still forming is looked for."""


def spelled_email_hold(text: str, pos: int) -> int:
    """Where a spelled-out address that more text may complete begins at the end of
    `text[pos:]` (`len(text)`: none). The email rule holds a trailing word ("jane" may become
    "jane@x.com"), but not "jane " or "jane at ex dot": released, their rest would arrive
    as text that is no address on its own."""
    size = len(text)
    if size == pos:
        return size
    start = max(pos, size - _SPELLED_REACH)
    spelled_at = may_spell(text, start)
    last = text[-1]
    if last in _SPACE_OR_BRACKET:
        end = len(text.rstrip())
        if not spelled_at and end > start and text[end - 1] in _LOCAL_CHARS:
            return _local_start(text, end, start)  # "jane ": the commonest case, no regex
    elif not spelled_at and not (last in "aA" and size - start > 1 and text[-2] in _SPACE_OR_BRACKET):
        return size  # most chunks end inside a word with no "at" near: nothing can be forming
    cut = size
    if last not in _LOCAL_CHARS or last in "aAtT":
        begins = _AT_BEGINS.search(text, max(start, size - 16))
        if begins is not None:
            cut = _local_start(text, begins.start() + 1, start)
    if spelled_at:
        dotted = _DOT_BEGINS.search(text, max(start, size - 16))
        if dotted is not None:  # "jane dot": the rest of a local part may follow
            cut = min(cut, _local_start(text, dotted.start() + 1, start))
        if last in _LOCAL_CHARS:  # "jane dot doe": from "jane", if its dots are spelled out
            cut = min(cut, _local_start(text, size, start))
    if spelled_at:
        at = start
        while (token := _AT_TOKEN.search(text, at)) is not None and token.start() < cut:
            if _DOMAIN_BEGINS.fullmatch(text, token.end()) is not None:
                return min(cut, _local_start(text, token.start() + 1, start))
            at = token.start() + 1  # tokens may overlap ("x at  at ex"): try each
    return cut


def _local_start(text: str, end: int, floor: int) -> int:
    """The start of the local part that ends at `end` (not before `floor`), with the words
    before it that spell its dots out ("jane dot doe" starts at "jane")."""
    at = end
    while at > floor and text[at - 1] in _LOCAL_CHARS:
        at -= 1
    while at > floor:
        back = at
        while back > floor and text[back - 1] in " \t\n":
            back -= 1
        if back == floor or text[back - 1] not in "tT)]}>":
            return at  # the common case: no "dot" ends right before it (no regex)
        dot = _DOT_BEFORE.search(text, max(floor, at - 24), at)
        if dot is None:
            return at
        at = dot.start()
        while at > floor and text[at - 1] in _LOCAL_CHARS:
            at -= 1
    return at


_SPACED_AT_HINT = re.compile(r"\s@|@\s|\w[ \t]+\.")
# What every text the view changes holds (a cheap first test: most prose chunks lack it).
_HINT = re.compile(r"[0-9\[(<{]")
_ASCII_TRIGGER = re.compile(
    rf"{_SPLIT_DIGITS.pattern}|\bdot\b|[\[(<{{]\s*at\s*[\])>}}]|{_SPLIT_PHONE_PREFIX.pattern}",
    re.IGNORECASE,
)


@dataclass(slots=True)
class View:
    """`text` as matched; `starts[i]`/`ends[i]` the original span of view character `i`."""

    text: str
    starts: list[int]
    ends: list[int]
    source: str
    """The original text."""

    def index(self, pos: int) -> int:
        """The first view character that comes from original position `pos` or later."""
        return bisect_left(self.starts, pos)

    def origin(self, start: int, end: int) -> tuple[int, int]:
        """The original span of view span `[start, end)`, with the format characters right
        after it: invisible characters inside or trailing a match are replaced with it."""
        source = self.source
        if start >= len(self.text):
            return len(source), len(source)
        end_at = self.ends[end - 1] if end > start else self.starts[start]
        while end_at < len(source) and _FORMAT.match(source, end_at) is not None:
            end_at += 1
        return self.starts[start], end_at

    def cut(self, index: int) -> int:
        """The original position of view position `index` (a hold-back point)."""
        return self.starts[index] if index < len(self.text) else len(self.source)


def needs_view(text: str) -> bool:
    """Whether `text` has anything the view would change (cheap: ASCII text is one search)."""
    if text.isascii():
        spaced_at = "@" in text and _SPACED_AT_HINT.search(text) is not None
        if not spaced_at and _HINT.search(text) is None and "dot" not in text.lower():
            return False
        return spaced_at or _ASCII_TRIGGER.search(text) is not None or _IBAN_HINT.search(text) is not None
    return (
        ("@" in text and _SPACED_AT_HINT.search(text) is not None)
        or not unicodedata.is_normalized("NFKC", text)
        or _FORMAT.search(text) is not None
        or near_ascii(text)
        or _ASCII_TRIGGER.search(text) is not None
        or _IBAN_HINT.search(text) is not None
    )


def _edit(
    text: str, starts: list[int], ends: list[int], edits: list[tuple[int, int, str]]
) -> tuple[str, list[int], list[int]]:
    """`text` with each `(start, end, replacement)` applied (sorted, not overlapping)."""
    parts: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    at = 0
    for start, end, replacement in edits:
        parts.append(text[at:start])
        new_starts.extend(starts[at:start])
        new_ends.extend(ends[at:start])
        parts.append(replacement)
        new_starts.extend([starts[start]] * len(replacement))
        new_ends.extend([ends[end - 1]] * len(replacement))
        at = end
    parts.append(text[at:])
    new_starts.extend(starts[at:])
    new_ends.extend(ends[at:])
    return "".join(parts), new_starts, new_ends


def _digit_edits(run: str, offset: int) -> list[tuple[int, int, str]]:
    """Edits collapsing one run of split digits: the most common separator goes; another one
    (as in "1 2 3 - 4 5 - 6 7 8 9") stays as "-"; uniformly split runs of some lengths keep
    the shape of what they usually are (`_SHAPES`)."""
    separators = [(offset + m.start(), offset + m.end(), m.group()) for m in _SEPARATOR.finditer(run)]
    if len(separators) < 2:  # a digit at the end, or a separator after it
        return [(start, end, "") for start, end, _ in separators]
    common = Counter(sep for _, _, sep in separators).most_common(1)[0][0]
    edits = [(start, end, "" if sep == common else "-") for start, end, sep in separators]
    uniform = run[-1].isdigit() and all(sep == common for _, _, sep in separators)
    for at in _SHAPES.get(len(separators), ()) if uniform else ():
        edits[at] = (edits[at][0], edits[at][1], "-")
    return edits


_SHAPES = {8: (2, 4), 6: (2,), 5: (1, 3)}
"""Where a uniformly split run of 9, 7 or 6 digits keeps a "-": the ddd-dd-dddd shape kept for
identity numbers, and the ddd-dddd and dd-dd-dd of local phone numbers (a bare run of 7 is
more often an id than a phone)."""


def _iban_edits(run: str, offset: int, *, at_end: bool) -> list[tuple[int, int, str]]:
    """Edits removing the separators of the longest IBAN (mod-97 valid) that `run` begins with;
    without one, of all of them when `run` reaches the end of the text (an IBAN may still be
    forming there)."""
    separators = [(offset + m.start(), offset + m.end(), "") for m in _IBAN_SEPARATOR.finditer(run)]
    if not separators:
        return []
    chars = [i for i, c in enumerate(run) if c.isalnum()]
    compact = "".join(run[i] for i in chars)
    for size in range(len(compact), 14, -1):
        if iban_valid(compact[:size]):
            last = offset + chars[size - 1]
            return [edit for edit in separators if edit[1] <= last]
    return separators if at_end else []


def build_view(text: str) -> View | None:
    """The normalized view of `text`, or None when it would be `text` itself."""
    if not needs_view(text):
        return None
    size = len(text)
    if text.isascii():
        view, starts, ends = text, list(range(size)), list(range(1, size + 1))
    else:
        parts: list[str] = []
        starts, ends = [], []
        confusable = confusable_table()
        for index, char in enumerate(text):
            if char < "\x80":
                parts.append(char)
                starts.append(index)
                ends.append(index + 1)
                continue
            if unicodedata.category(char) == "Cf":
                continue
            folded = unicodedata.normalize("NFKC", char)
            if len(folded) == 1:
                folded = confusable.get(folded, folded)
            parts.append(folded)
            starts.extend([index] * len(folded))
            ends.extend([index + 1] * len(folded))
        view = "".join(parts)
    if "-" in view or " " in view:
        size = len(view)
        edits = [
            edit
            for match in _SPLIT_IBAN.finditer(view)
            for edit in _iban_edits(match.group(), match.start(), at_end=match.end() == size)
        ]
        if edits:
            view, starts, ends = _edit(view, starts, ends, edits)
    edits = [
        (match.start() + m.start(), match.start() + m.end(), "")
        for match in _SPLIT_PHONE_PREFIX.finditer(view)
        for m in _IBAN_SEPARATOR.finditer(match.group())
    ]
    if edits:
        view, starts, ends = _edit(view, starts, ends, edits)
    edits = [
        edit for match in _SPLIT_DIGITS.finditer(view) for edit in _digit_edits(match.group(), match.start())
    ]
    if edits:
        view, starts, ends = _edit(view, starts, ends, edits)
    edits = []
    for match in _SPELLED_EMAIL.finditer(view):
        for token in _TOKEN.finditer(view, match.start(), match.end()):
            edits.append((token.start(), token.end(), "@" if token.group("at") else "."))
    if edits:
        view, starts, ends = _edit(view, starts, ends, edits)
    if view == text:
        return None
    return View(view, starts, ends, text)
