"""Values side by side: a run of digit groups ("415-555-0132 415-555-0133", "123-45-6789 4111
1111 1111 1111") split into the values it holds.

A rule for a digit-led kind (phones, cards) matches the whole run of groups joined by in-value
separators (space, `-`, `.`, `/`, no-break and thin spaces); tabs, newlines, commas, semicolons
and pipes end a run, as they separate cells, not parts of one value. A run that is one valid
value counts whole, as before. One that is not (two phones a space apart fail libphonenumber
together, a card after an SSN fails Luhn) is re-tried as its parts: of the ways to cut it at
separators into valid values, the one covering the most digits wins (then the fewest values).
A part cut from a longer run must look like a value of its kind on its own (a phone of 10+
digits or with a `+`/`(`/`00` prefix, a card grouped as cards are), and may not be cut inside
tighter grouping than it holds itself (`45-6789 4111 ...` is not cut from `123-45-6789 4111`:
the `-` binds tighter than the spaces inside the part), so lists of counts, years and ports stay
text."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from sluicegate.guardrails.validators import card_valid

SEPARATORS = "-./ \u00a0\u2009\u202f"
"""Characters joining the groups of one value: a space, `-`, `.`, `/`, no-break and thin spaces."""
SEP = "[-./ \u00a0\u2009\u202f]"
"""`SEPARATORS` as a pattern class."""

# A group: a country code, an area code in parentheses, or digits; an extension may end the run.
_TOKEN = re.compile(r"\+\d+|\(\+?\d{1,5}\)|\d+(?:\s?(?:x|ext\.?)\s?\d(?:[-.\s]?\d){0,5}\Z)?", re.IGNORECASE)
_WEAK = frozenset(" \u00a0\u2009\u202f")
MAX_PIECE_TOKENS = 8
"""Groups one value may span (a country code, an area code and six groups)."""

Span = tuple[int, int]


def _rank(separator: str) -> int:
    """How loosely a separator binds: nothing (after `(555)`) 0; `-`, `.`, `/` 1; a space 2."""
    if not separator:
        return 0
    return 2 if any(c in _WEAK for c in separator) else 1


Accept = Callable[[str, Sequence[int]], str | None]
"""What a piece of a run is (`piece`, its groups' digit counts): a kind's name, or None."""


def segment(text: str, accept: Accept, *, min_digits: int, max_digits: int) -> list[tuple[int, int, str]]:
    """The values in the run `text` as `(start, end, kind)`: spans of whole groups that
    `accept` names, not overlapping, covering the most digits (then the fewest spans, then the
    most with an international or area-code prefix). A span is cut only where the separator
    binds at most as loosely as any inside it."""
    tokens = [(m.start(), m.end(), sum(c.isdigit() for c in m.group())) for m in _TOKEN.finditer(text)]
    count = len(tokens)
    if not count:
        return []
    seps = [_rank(text[tokens[i - 1][1] : tokens[i][0]]) for i in range(1, count)]
    # best[j]: (digits covered, -spans, prefixed spans, spans) over the first j groups
    best: list[tuple[int, int, int, list[tuple[int, int, str]]]] = [(0, 0, 0, [])]
    for j in range(1, count + 1):
        choice = best[j - 1]
        digits = 0
        inner = 0
        for i in range(j - 1, max(-1, j - 1 - MAX_PIECE_TOKENS), -1):
            digits += tokens[i][2]
            if i < j - 1:
                inner = max(inner, seps[i])
            if digits > max_digits:
                break
            if digits < min_digits:
                continue
            if (i > 0 and seps[i - 1] < inner) or (j < count and seps[j - 1] < inner):
                continue
            base = best[i]
            start, end = tokens[i][0], tokens[j - 1][1]
            prefixed = base[2] + (text[start] in "+(" or text.startswith("00", start))
            score = (base[0] + digits, base[1] - 1, prefixed)
            if score <= choice[:3]:
                continue
            kind = accept(text[start:end], [t[2] for t in tokens[i:j]])
            if kind is not None:
                choice = (*score, [*base[3], (start, end, kind)])
        best.append(choice)
    return best[count][3]


# One phone number as the phone rule took it before runs: an optional country code and area
# code, then two to six groups or one block of 6 to 15 digits, and an optional extension.
_ONE_PHONE = re.compile(
    rf"(?:\+\d{{1,3}}{SEP}?)?(?:\(\+?\d{{1,5}}\){SEP}?)?(?:\d{{1,6}}(?:{SEP}\d{{1,8}}){{1,5}}|\d{{6,15}})"
    r"(?:\s?(?:x|ext\.?)\s?\d(?:[-.\s]?\d){0,5})?",
    re.IGNORECASE,
)
_SSN = re.compile(r"\d{3}-\d{2}-\d{4}")
_IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)")
_LOOSENS = re.compile(r"[-./]\d+[ \u00a0\u2009\u202f]")


def _phone(piece: str, valid: Callable[[str], bool]) -> bool:
    return _ONE_PHONE.fullmatch(piece) is not None and valid(piece)


def _phone_part(piece: str, groups: Sequence[int], valid: Callable[[str], bool]) -> bool:
    """A phone number cut from a longer run: 10+ digits or an international or area-code
    prefix (shorter local numbers side by side read as lists of counts), never loosening its
    grouping after a `-`, `.` or `/` (`+1 415-555-0132`, not `45.156.227.216 5117`)."""
    strong = sum(groups) >= 10 or piece[0] in "+(" or piece.startswith("00") or _tight(piece, groups)
    return strong and _LOOSENS.search(piece) is None and _phone(piece, valid)


def _tight(piece: str, groups: Sequence[int]) -> bool:
    """Three or more groups joined by `-`, `.` or `/` only (`051-972-299`, `40-95-78-17`): one
    value's grouping, which a list of counts does not have."""
    return len(groups) >= 3 and not any(c in _WEAK for c in piece)


_ROW_VALUES = frozenset({"credit-card", "ssn"})
PHONE_LIKE = re.compile(r"00[1-9]\d{6,14}|\d{10}")
"""A number no plan accepts that a row still holds as a phone: ten bare digits (`1322342321`), or
a `00` international prefix and digits with no valid plan behind it (`00650277588`)."""


def _between_values(text: str, found: list[tuple[int, int, str]], valid: Callable[[str], bool]) -> list[Span]:
    """Phones filling the whole gap between values the run holds (`... 6575189364208374 26
    841054 30325354795721`): a short local number beside a card or an SSN is a field of that
    row, not a count in a list (a run of numbers with no such value in it stays text; an IPv4
    address beside counts is a log line's `ip status bytes`). A `PHONE_LIKE` block beside any
    value of the run is one too, valid or not (fail closed: a count is never ten bare digits)."""
    edges = [0, *(e for s, e, _ in found for e in (s, e)), len(text)]
    kinds = [None, *(kind for _, _, kind in found), None]
    phones = []
    for index, (start, end) in enumerate(zip(edges[::2], edges[1::2], strict=True)):
        beside = {kinds[index], kinds[index + 1]} - {None}
        if not beside:
            continue
        piece = text[start:end].strip(SEPARATORS)
        if not piece:
            continue
        at = text.index(piece, start)
        if PHONE_LIKE.fullmatch(piece) is not None or (
            beside & _ROW_VALUES and _LOOSENS.search(piece) is None and _phone(piece, valid)
        ):
            phones.append((at, at + len(piece)))
    return phones


def _card_grouped(groups: Sequence[int]) -> bool:
    """Groups as card numbers are written: one block, fours (the last may be shorter), or
    American Express's and Diners Club's 4-6-5 and 4-6-4."""
    if len(groups) == 1:
        return True
    if list(groups) in ([4, 6, 5], [4, 6, 4]):
        return True
    return len(groups) >= 3 and all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4


def run_values(text: str, kind: str, phone_valid: Callable[[str], bool]) -> list[Span]:
    """The values of `kind` (`phone`, `credit-card`) in the run `text`: the whole run when it
    is one (`phone_valid`: libphonenumber's check in the rule's regions; cards: Luhn and issuer
    ranges), else its share of the run split where phones, cards, SSNs and IPv4 addresses
    compete for its groups (so a phone is not cut across a card, nor a card across an SSN). A card cut from a
    longer run must be grouped as cards are (`_card_grouped`)."""
    if kind == "phone" and _phone(text, phone_valid):
        return [(0, len(text))]
    if kind == "credit-card" and card_valid(text):
        return [(0, len(text))]

    def accept(piece: str, groups: Sequence[int]) -> str | None:
        if sum(groups) >= 12 and _card_grouped(groups) and card_valid(piece):
            return "credit-card"
        if _SSN.fullmatch(piece) is not None:
            return "ssn"
        if _IPV4.fullmatch(piece) is not None:
            return "ip-address"
        if _phone_part(piece, groups, phone_valid):
            return "phone"
        return None

    found = segment(text, accept, min_digits=6, max_digits=19)
    spans = [(start, end) for start, end, what in found if what == kind]
    if kind == "phone":
        spans = sorted([*spans, *_between_values(text, found, phone_valid)])
    return spans
