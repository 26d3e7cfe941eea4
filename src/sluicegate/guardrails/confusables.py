"""Look-alike letters folded to the ASCII ones they imitate, for the normalized view: a Cyrillic
`а` in `jane@exаmple.com` or a Greek `ο` in a domain would otherwise hide the address from
every pattern. The table is Unicode's confusables data (UTS #39, as the `confusable-homoglyphs`
package ships it), loaded on first use: only non-ASCII text needs it.

Only letters beside ASCII letters, digits, `@` or `.` fold: a word written wholly in Cyrillic or
Greek is not an evasion, and its view is left alone."""

from __future__ import annotations

import re
import string
import threading

_TARGETS = string.ascii_letters + "@."
_lock = threading.Lock()
_table: dict[str, str] | None = None
_near: re.Pattern[str] | None = None


def table() -> dict[str, str]:
    """Non-ASCII characters mapped to the ASCII letter (or `@`, `.`) they are confusable with."""
    global _table, _near
    if _table is None:
        with _lock:
            if _table is None:
                from confusable_homoglyphs.confusables import confusables_data

                folded: dict[str, str] = {}
                for target in _TARGETS:
                    for entry in confusables_data.get(target, ()):
                        char = entry["c"]
                        if len(char) == 1 and not char.isascii():
                            folded.setdefault(char, target)
                chars = re.escape("".join(sorted(folded)))
                _near = re.compile(f"[{chars}](?=[A-Za-z0-9@.])|(?<=[A-Za-z0-9@.])[{chars}]")
                _table = folded
    return _table


def near_ascii(text: str) -> bool:
    """Whether `text` holds a look-alike letter right beside an ASCII letter, digit, `@` or `.`
    (`exаmple`): the mix an evasion makes."""
    table()
    assert _near is not None
    return _near.search(text) is not None
