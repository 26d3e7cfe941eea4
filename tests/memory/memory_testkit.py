"""Test helpers: a deterministic bag-of-words embedder and processors that observe a run."""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Sequence
from typing import Any

from sluicegate.processors import Processor


class KeywordEmbedder:
    """Each word hashes to one of 64 dimensions: texts sharing words are similar, others are not."""

    model_id = "keyword-test"
    dimensions = 64

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self.vector(t) for t in texts]

    @staticmethod
    def vector(text: str) -> list[float]:
        vec = [0.0] * 64
        for word in re.findall(r"[a-z]+", text.lower()):
            vec[zlib.crc32(word.encode()) % 64] += 1.0
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        return [x / norm for x in vec]


class Spy(Processor):
    """Records, after memory's input processors ran, the remembered messages and system messages."""

    id = "spy"

    def __init__(self) -> None:
        super().__init__()
        self.remembered: list[str] = []
        self.memory_system: list[str] = []
        self.sources: dict[str, str | None] = {}

    def process_input(self, args: Any) -> Any:
        self.remembered = [m.text for m in args.message_list.get.remembered.db()]
        self.memory_system = [m["content"] for m in args.message_list.get_system_messages(tag="memory")]
        self.sources = {m.text: args.message_list.source_of(m) for m in args.message_list.get.all.db()}
        return None


def prompt_texts(prompt: list[dict[str, Any]]) -> list[str]:
    """`role: text` for each non-system prompt message (tool parts shown by name)."""
    out: list[str] = []
    for message in prompt:
        if message["role"] == "system":
            continue
        pieces = []
        for part in message["content"]:
            if part.get("type") == "text":
                pieces.append(part["text"])
            elif part.get("type") in ("tool-call", "tool-result"):
                pieces.append(f"<{part['type']}:{part['toolName']}>")
        out.append(f"{message['role']}: {' '.join(pieces)}")
    return out


def system_texts(prompt: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in prompt if m["role"] == "system"]
