"""`UnicodeNormalizer`: canonical Unicode and tidy whitespace in the input before the model sees it."""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import Any

import regex

from sluicegate.messages import Message
from sluicegate.messages.part import Part
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.processors.base import Processor

# C0 controls except tab, newline and carriage return; DEL; C1 controls.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Everything outside printable ASCII and the rest of the Basic Multilingual Plane (emoji live in
# the astral planes), plus the joiners and variation selectors that only glue emoji together.
_NON_BMP_OR_CONTROL = re.compile("[^\t\n\r\x20-\x7e\u00a0-\uffff]|[\u200d\ufe0e\ufe0f]")
# Format characters (Unicode category Cf: zero-width space and joiners, word joiner, BOM, bidi
# marks) are invisible and NFKC keeps them, so they hide values from pattern guards.
_FORMAT = regex.compile(r"\p{Cf}")
_NEWLINE_RUNS = re.compile(r"\n+")
_BLANKS = re.compile(r"[ \t]+")


class UnicodeNormalizer(Processor):
    """Normalizes user text to NFKC (folding look-alike characters that hide homograph tricks),
    optionally strips control characters, collapses whitespace runs and trims.

    Options follow Mastra: `strip_control_chars` (False), `preserve_emojis` (True; with
    `strip_control_chars`, False also removes emoji and other astral-plane characters),
    `collapse_whitespace` (True: CR/CRLF become LF, newline runs one LF, space/tab runs one space),
    `trim` (True), `strip_format_chars` (True: format characters such as U+200B-U+200D, U+2060
    and U+FEFF are removed; a deliberate addition, as they would otherwise hide values from the
    pattern guards that follow).

    Example::

        normalizer = UnicodeNormalizer(strip_control_chars=True, collapse_whitespace=True)
        agent = Agent(name="a", model=model, input_processors=[normalizer])
    """

    id = "unicode-normalizer"
    name = "Unicode Normalizer"

    def __init__(
        self,
        *,
        strip_control_chars: bool = False,
        preserve_emojis: bool = True,
        collapse_whitespace: bool = True,
        trim: bool = True,
        strip_format_chars: bool = True,
    ) -> None:
        super().__init__()
        self.strip_control_chars = strip_control_chars
        self.preserve_emojis = preserve_emojis
        self.collapse_whitespace = collapse_whitespace
        self.trim = trim
        self.strip_format_chars = strip_format_chars

    def normalize(self, text: str) -> str:
        """The normalized form of one string."""
        text = unicodedata.normalize("NFKC", text)
        if self.strip_format_chars:
            text = _FORMAT.sub("", text)
        if self.strip_control_chars:
            text = (_CONTROL if self.preserve_emojis else _NON_BMP_OR_CONTROL).sub("", text)
        if self.collapse_whitespace:
            text = _NEWLINE_RUNS.sub("\n", text.replace("\r\n", "\n").replace("\r", "\n"))
            text = _BLANKS.sub(" ", text)
        if self.trim:
            text = text.strip()
        return text

    def _normalize_message(self, message: Message) -> Message:
        parts = [
            Part({**part, "text": self.normalize(part["text"])})
            if part.get("type") == "text" and isinstance(part.get("text"), str)
            else part
            for part in message.content.parts
        ]
        legacy = message.content.content
        content = dataclasses.replace(
            message.content,
            parts=parts,
            content=self.normalize(legacy) if isinstance(legacy, str) else legacy,
        )
        return dataclasses.replace(message, content=content)

    def process_input(self, args: ProcessInputArgs) -> list[Any]:
        return [self._normalize_message(message) for message in args.messages]
