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


def segment(
    text: str,
    accept: Callable[[str, Sequence[int]], bool],
    *,
    min_digits: int,
    max_digits: int,
) -> list[Span]:
    """The values in the run `text`: spans of whole groups, each accepted by
    `accept(piece, group_digit_counts)`, not overlapping, covering the most digits (then the
    fewest spans). A span is cut only where the separator binds at most as loosely as any inside
    it."""
    tokens = [(m.start(), m.end(), sum(c.isdigit() for c in m.group())) for m in _TOKEN.finditer(text)]
    count = len(tokens)
    if not count:
        return []
    seps = [_rank(text[tokens[i - 1][1] : tokens[i][0]]) for i in range(1, count)]
    # best[j]: (digits covered, -spans, spans) over the first j groups
    best: list[tuple[int, int, list[Span]]] = [(0, 0, [])]
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
            score = (base[0] + digits, base[1] - 1)
            if score <= choice[:2]:
                continue
            start, end = tokens[i][0], tokens[j - 1][1]
            if accept(text[start:end], [t[2] for t in tokens[i:j]]):
                choice = (score[0], score[1], [*base[2], (start, end)])
        best.append(choice)
    return best[count][2]


def pieces(
    text: str,
    whole: Callable[[str], bool],
    part: Callable[[str, Sequence[int]], bool],
    *,
    min_digits: int,
    max_digits: int,
) -> list[Span]:
    """`[(0, len(text))]` when the run is one value (`whole`), else its parts (`segment` with
    `part`)."""
    if whole(text):
        return [(0, len(text))]
    return segment(text, part, min_digits=min_digits, max_digits=max_digits)


# One phone number as the phone rule took it before runs: an optional country code and area
# code, then two to six groups or one block of 6 to 15 digits, and an optional extension.
_ONE_PHONE = re.compile(
    rf"(?:\+\d{{1,3}}{SEP}?)?(?:\(\+?\d{{1,5}}\){SEP}?)?(?:\d{{1,6}}(?:{SEP}\d{{1,8}}){{1,5}}|\d{{6,15}})"
    r"(?:\s?(?:x|ext\.?)\s?\d(?:[-.\s]?\d){0,5})?",
    re.IGNORECASE,
)


def phone_pieces(text: str, valid: Callable[[str], bool]) -> list[Span]:
    """The phone numbers in a run (`valid`: the phone check, libphonenumber's in the rule's
    regions). A part cut from a longer run needs 10+ digits or an international or area-code
    prefix: shorter local numbers side by side read as lists of counts."""

    def whole(piece: str) -> bool:
        return _ONE_PHONE.fullmatch(piece) is not None and valid(piece)

    def part(piece: str, groups: Sequence[int]) -> bool:
        strong = sum(groups) >= 10 or piece[0] in "+(" or piece.startswith("00")
        return strong and whole(piece)

    return pieces(text, whole, part, min_digits=6, max_digits=17)


def _card_grouped(groups: Sequence[int]) -> bool:
    """Groups as card numbers are written: one block, fours (the last may be shorter), or
    American Express's and Diners Club's 4-6-5 and 4-6-4."""
    if len(groups) == 1:
        return True
    if list(groups) in ([4, 6, 5], [4, 6, 4]):
        return True
    return len(groups) >= 3 and all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4


def card_pieces(text: str, valid: Callable[[str], bool]) -> list[Span]:
    """The card numbers in a run (`valid`: Luhn and issuer ranges); a part cut from a longer
    run must be grouped as cards are (`_card_grouped`)."""
    return pieces(
        text,
        valid,
        lambda piece, groups: _card_grouped(groups) and valid(piece),
        min_digits=12,
        max_digits=19,
    )
