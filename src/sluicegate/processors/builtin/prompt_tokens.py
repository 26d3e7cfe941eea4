"""Token counts of V2 prompt messages, as `TokenLimiter` and `ToolResultTokenLimiter` need them.

Counts are real tiktoken counts (see `sluicegate.tokens`), cached per part so a long history is
tokenized once, not once per step.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import tiktoken

from sluicegate.messages import Message
from sluicegate.messages.convert import PromptMessage, to_prompt_messages

TOKENS_PER_MESSAGE = 4
"""Framing of one chat message: OpenAI's 3 tokens per message plus the role's token."""
TOKENS_PER_CONVERSATION = 3
"""The tokens that prime the assistant's reply."""
TOKENS_PER_IMAGE = 765
"""Providers bill an image at a near-flat rate; its encoded size says little."""
BYTES_PER_TOKEN = 4
"""For non-image files, whose decoded bytes are usually text-like."""

_CACHE_LIMIT = 200_000


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


class PartTokenCounter:
    """Token counts of prompt parts for one encoding, remembered between calls.

    Text is cached by its string (a repeated step finds the same string objects, whose hash
    Python keeps); tool arguments and results by identity (each step's prompt is rebuilt around
    the same argument and result objects), so later steps tokenize only what is new.
    """

    __slots__ = ("_encode", "_texts", "_values", "encoding")

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding
        self._encode = encoding.encode_ordinary
        self._texts: dict[str, int] = {}
        self._values: dict[int, tuple[Any, int]] = {}

    def text(self, text: str) -> int:
        count = self._texts.get(text)
        if count is None:
            if len(self._texts) >= _CACHE_LIMIT:
                self._texts.clear()
            count = self._texts[text] = len(self._encode(text))
        return count

    def value(self, value: Any) -> int:
        """A tool argument or result as the provider serializes it: text as is, media at the
        file rate, anything else as compact JSON (cached by the object's identity)."""
        if isinstance(value, str):
            return self.text(value)
        if _is_media(value):
            return _file_tokens(value)
        cached = self._values.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        count = len(self._encode(compact_json(value)))
        if len(self._values) >= _CACHE_LIMIT:
            self._values.clear()
        self._values[id(value)] = (value, count)
        return count

    def prompt_part(self, part: dict[str, Any], text: Callable[[str], int] | None = None) -> int:
        """One part of a V2 prompt message; `text` counts its text (the exact count by default)."""
        kind = part.get("type")
        if kind == "text" or kind == "reasoning":
            return (text or self.text)(part.get("text") or "")
        if kind == "tool-call":
            args = part.get("input", part.get("args"))
            return self.text(str(part.get("toolName", ""))) + self.value({} if args is None else args)
        if kind == "tool-result":
            output = part.get("output", part.get("result"))
            if isinstance(output, dict) and "value" in output and isinstance(output.get("type"), str):
                output = output["value"]  # the AI SDK wrapper: {"type": "json"|"text"|..., "value": ...}
            return self.value(output)
        if kind == "file" or kind == "image":
            return _file_tokens(part)
        return 0

    def prompt_message(self, message: PromptMessage) -> int:
        """Tokens one V2 prompt message costs, framing included."""
        content = message.get("content")
        if isinstance(content, str):
            return TOKENS_PER_MESSAGE + self.text(content)
        part = self.prompt_part
        return TOKENS_PER_MESSAGE + sum(part(p) for p in content or ())

    def prompt_message_bound(self, message: PromptMessage) -> int:
        """At least `prompt_message(message)`, without tokenizing text: exact for whatever is
        cached or is not text."""
        content = message.get("content")
        if isinstance(content, str):
            return TOKENS_PER_MESSAGE + self.text_bound(content)
        part, bound = self.prompt_part, self.text_bound
        return TOKENS_PER_MESSAGE + sum(part(p, bound) for p in content or ())

    def message(self, message: Message) -> int:
        """Tokens a stored message costs in the prompt (as the V2 messages it becomes)."""
        return sum(self.prompt_message(m) for m in to_prompt_messages([message]))

    def text_bound(self, text: str) -> int:
        """At least `text`'s token count, without tokenizing: the cached count when there is
        one, else its UTF-8 size (a byte-level BPE token is never shorter than one byte)."""
        count = self._texts.get(text)
        if count is not None:
            return count
        return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))

    def system(self, content: str) -> int:
        return TOKENS_PER_MESSAGE + self.text(content)

    def count(self, text: str) -> int:
        """Uncached count, for one-off strings such as stream deltas."""
        return len(self._encode(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` within `max_tokens` tokens, never ending mid-character."""
        if max_tokens <= 0:
            return ""
        tokens = self._encode(text)
        if len(tokens) <= max_tokens:
            return text
        return self.encoding.decode_bytes(tokens[:max_tokens]).decode("utf-8", errors="ignore")


def _is_media(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("data"), str)
        and isinstance(value.get("mediaType", value.get("mimeType")), str)
    )


def _file_tokens(part: Any) -> int:
    media_type = str(part.get("mediaType") or part.get("mimeType") or "")
    if media_type.startswith("image/"):
        return TOKENS_PER_IMAGE
    data = part.get("data")
    if isinstance(data, (bytes, bytearray)):
        return max(1, len(data) // BYTES_PER_TOKEN)
    if isinstance(data, str) and not data.startswith(("http://", "https://")):
        encoded = data.split(",", 1)[1] if data.startswith("data:") else data
        return max(1, (len(encoded) * 3 // 4) // BYTES_PER_TOKEN)
    return 258  # a remote file of unknown size
