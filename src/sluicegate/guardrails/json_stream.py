"""An incremental JSON lexer for a tool call's streamed arguments: it says, delta by delta,
what the text decodes to and when a string or a number is complete, so a guard judges values,
not their escapes (`jane.doe\\u0040example.com`, `4.111111111111111e15`).

It is a lexer, not a validator: outside strings only whitespace, `{}[],:`, `true`/`false`/
`null` and numbers may appear; anything else (or a bad escape, or a bad number) makes the rest
`MALFORMED`, which a guard holds and judges whole at the end. Escapes and surrogate pairs split
across deltas (`\\u00` | `40`) are held until complete.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Final

RAW: Final = 0
"""Structure (whitespace, punctuation, literals): safe to pass on as it is."""
OPEN: Final = 1
"""A string (key or value) begins; the `"` is not included."""
TEXT: Final = 2
"""Decoded characters of the open string."""
CLOSE: Final = 3
"""The open string ended; the `"` is not included."""
NUMBER: Final = 4
"""A complete number token (its text as written)."""
MALFORMED: Final = 5
"""Text from where the arguments stopped being JSON on (raw, undecoded)."""

Event = tuple[int, str]

_STRUCTURE = frozenset(" \t\r\n{}[],:")
_NUMBER_RUN = re.compile(r"[0-9+\-.eE]*")
_LITERALS = ("true", "false", "null")
_SPECIAL = re.compile(r'["\\]')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_HEX = re.compile(r"[0-9a-fA-F]{4}")
_MAX_EXPANDED_DIGITS = 64
"""A number written with an exponent is also judged written out in full, up to this many
digits (no card, phone or account number is longer; `1e999999` is not expanded)."""


class JsonTokens:
    """The lexer's state for one tool call's arguments; `feed` each delta, `finish` at the end."""

    __slots__ = ("_escape", "_high", "_literal", "_malformed", "_number", "_pieces", "_string")

    def __init__(self) -> None:
        self._string = False
        self._escape = ""  # an escape still arriving: "\\", "\\u00", ...
        self._high = ""  # a decoded high surrogate waiting for its low half
        self._number: list[str] = []  # the pieces of a number still arriving
        self._literal = ""
        self._malformed = False
        self._pieces: list[str] = []

    @property
    def malformed(self) -> bool:
        return self._malformed

    @property
    def pending(self) -> str:
        """Raw text held inside the lexer (an escape, a number or a literal still arriving)."""
        return self._escape + "".join(self._number) + self._literal

    def feed(self, text: str) -> list[Event]:
        """The events of one delta, in order."""
        if self._malformed:
            return [(MALFORMED, text)] if text else []
        events: list[Event] = []
        i = 0
        size = len(text)
        while i < size:
            if self._string:
                i = self._in_string(text, i, events)
                continue
            ch = text[i]
            if self._number:
                end = _NUMBER_RUN.match(text, i).end()  # type: ignore[union-attr]
                if end > i:
                    self._number.append(text[i:end])  # joined once: linear in a long number
                    i = end
                    continue
                if not self._end_number(events):
                    return self._fail(events, text[i:])
                continue
            if self._literal:
                word = self._literal + ch
                if not any(literal.startswith(word) for literal in _LITERALS):
                    return self._fail(events, self._take_literal() + text[i:])
                self._literal = word
                i += 1
                if word in _LITERALS:
                    _raw(events, self._take_literal())
                continue
            if ch == '"':
                self._string = True
                events.append((OPEN, ""))
                i += 1
            elif ch in _STRUCTURE:
                j = i + 1
                while j < size and text[j] in _STRUCTURE:
                    j += 1
                _raw(events, text[i:j])
                i = j
            elif ch == "-" or "0" <= ch <= "9":
                end = _NUMBER_RUN.match(text, i).end()  # type: ignore[union-attr]
                self._number = [text[i:end]]
                i = end
            elif ch in "tfn":
                self._literal = ch
                i += 1
            else:
                return self._fail(events, text[i:])
        return events

    def finish(self) -> list[Event]:
        """The end of the arguments: a number at the very end is complete; a string, escape or
        literal still open makes the rest malformed."""
        if self._malformed:
            return []
        events: list[Event] = []
        if self._number:
            if not self._end_number(events):
                return self._fail(events, "")
        elif self._string or self._literal:
            return self._fail(events, "")
        return events

    # ------------------------------------------------------------------ internals

    def _in_string(self, text: str, i: int, events: list[Event]) -> int:
        """Decode string content from `text[i]`; the index after what was consumed."""
        size = len(text)
        pieces = self._pieces
        while i < size:
            if self._escape:
                i = self._continue_escape(text, i, pieces)
                if self._malformed:
                    _flush_pieces(events, pieces)
                    events.append((MALFORMED, self._escape + text[i:]))
                    self._escape = ""
                    return size
                continue
            found = _SPECIAL.search(text, i)
            end = size if found is None else found.start()
            if end > i:
                self._take_high(pieces)
                pieces.append(text[i:end])
            if found is None:
                i = size
                break
            if text[end] == '"':
                self._take_high(pieces)
                _flush_pieces(events, pieces)
                events.append((CLOSE, ""))
                self._string = False
                return end + 1
            self._escape = "\\"
            i = end + 1
        _flush_pieces(events, pieces)
        return i

    def _continue_escape(self, text: str, i: int, pieces: list[str]) -> int:
        """Add to the escape being read; decode it once complete."""
        escape = self._escape
        if escape == "\\":
            ch = text[i]
            if ch == "u":
                self._escape = "\\u"
                return i + 1
            decoded = _ESCAPES.get(ch)
            if decoded is None:
                self._malformed = True
                return i
            self._take_high(pieces)
            pieces.append(decoded)
            self._escape = ""
            return i + 1
        need = 6 - len(escape)
        chunk = text[i : i + need]
        escape += chunk
        if len(escape) < 6:
            if not all(c in "0123456789abcdefABCDEF" for c in chunk):
                self._malformed = True
                return i
            self._escape = escape
            return i + len(chunk)
        if _HEX.fullmatch(escape, 2) is None:
            self._malformed = True
            return i
        self._escape = ""
        code = int(escape[2:], 16)
        if 0xDC00 <= code <= 0xDFFF and self._high:
            pieces.append((self._high + chr(code)).encode("utf-16", "surrogatepass").decode("utf-16"))
            self._high = ""
        else:
            self._take_high(pieces)
            if 0xD800 <= code <= 0xDBFF:
                self._high = chr(code)
            else:
                pieces.append(chr(code))
        return i + len(chunk)

    def _take_high(self, pieces: list[str]) -> None:
        """A high surrogate not followed by its low half stands alone (as `json.loads` reads it)."""
        if self._high:
            pieces.append(self._high)
            self._high = ""

    def _end_number(self, events: list[Event]) -> bool:
        token = "".join(self._number)
        self._number = []
        if _NUMBER.fullmatch(token) is None:
            self._number = [token]  # kept for the malformed rest
            return False
        events.append((NUMBER, token))
        return True

    def _take_literal(self) -> str:
        literal = self._literal
        self._literal = ""
        return literal

    def _fail(self, events: list[Event], rest: str) -> list[Event]:
        """Everything from here on is malformed: the lexer's pending text and `rest`."""
        self._malformed = True
        held = self._escape + "".join(self._number) + self._literal + rest
        self._escape = self._literal = ""
        self._number = []
        if held:
            events.append((MALFORMED, held))
        return events


def _raw(events: list[Event], text: str) -> None:
    if events and events[-1][0] == RAW:
        events[-1] = (RAW, events[-1][1] + text)
    else:
        events.append((RAW, text))


def _flush_pieces(events: list[Event], pieces: list[str]) -> None:
    if pieces:
        events.append((TEXT, "".join(pieces)))
        pieces.clear()


def encode_text(text: str) -> str:
    """`text` as the inside of a JSON string (the quotes left off); a lone surrogate escaped."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(text)[1:-1]
    return json.dumps(text, ensure_ascii=False)[1:-1]


def number_texts(token: str) -> list[str]:
    """The texts a number token shows: as written and, for an exponent or fraction form, its
    digits written out in full (`4.111111111111111e15` -> `4111111111111111`)."""
    texts = [token]
    if "e" in token or "E" in token or "." in token:
        try:
            value = Decimal(token)
        except InvalidOperation:
            return texts
        if value.is_finite() and abs(value.adjusted()) < _MAX_EXPANDED_DIGITS:
            whole = value == value.to_integral_value()
            plain = format(value.normalize() if whole else value, "f")
            if len(plain) <= _MAX_EXPANDED_DIGITS * 2 and plain != token:
                texts.append(plain)
    return texts


_LENIENT_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|["\\/bfnrt])')


def lenient_text(raw: str) -> str:
    """What malformed argument text shows once its escapes are read (surrogate pairs joined;
    JavaScript's `\\xHH` too): a client or a tool may still decode it, so it is judged this way
    as well as raw."""

    def decode(match: re.Match[str]) -> str:
        body = match.group(1)
        return chr(int(body[1:], 16)) if body[0] in "ux" else _ESCAPES[body]

    decoded = _LENIENT_ESCAPE.sub(decode, raw)
    return decoded.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
