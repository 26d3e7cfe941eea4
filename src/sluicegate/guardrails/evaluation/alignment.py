"""What a chain changed in a text: the regions of the original it replaced or removed.

The chain is a black box (any processors, any redaction method), so the regions come from a
character diff of its output against the input. Two refinements make the diff read like
redactions: changed regions separated by fewer than `MIN_KEPT` non-space characters are one
region (a mask keeps `@`, `-` or a card's last digits: `j******e@*******.com`; a space
between two masks too, but not between two placeholders like `[EMAIL] [PHONE]`), and a change
that only normalises (fullwidth to ASCII, zero-width characters dropped) is not a redaction.
"""

from __future__ import annotations

import difflib
import unicodedata
from dataclasses import dataclass

MIN_KEPT = 3
"""Unchanged runs shorter than this between two changes belong to one redaction."""


@dataclass(frozen=True, slots=True)
class Region:
    start: int
    end: int
    replacement: str


def canonical(text: str) -> str:
    """`text` as compared for leaks and normalisation: NFKC, format characters (U+200B, ...)
    removed, case folded."""
    folded = unicodedata.normalize("NFKC", text)
    return "".join(c for c in folded if unicodedata.category(c) != "Cf").casefold()


def _names_something(replacement: str) -> bool:
    return any(c.isalnum() for c in replacement)


def changed_regions(original: str, output: str) -> list[Region]:
    """The regions of `original` that `output` replaced or removed, in order."""
    if original == output:
        return []
    if not output:
        return [Region(0, len(original), "")] if original else []
    matcher = difflib.SequenceMatcher(None, original, output, autojunk=False)
    merged: list[list[int]] = []  # [start, end, out_start, out_end]
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if merged:
            last = merged[-1]
            gap = original[last[1] : a0]
            masks = not _names_something(output[last[2] : last[3]]) and not _names_something(output[b0:b1])
            if len(gap) < MIN_KEPT and (masks or not gap.isspace()):
                last[1], last[3] = a1, b1
                continue
        merged.append([a0, a1, b0, b1])
    regions = []
    for a0, a1, b0, b1 in merged:
        replacement = output[b0:b1]
        if a0 == a1:
            continue  # an insertion removes nothing
        if canonical(original[a0:a1]) == canonical(replacement):
            continue  # normalised, not redacted
        regions.append(Region(a0, a1, replacement))
    return regions
