"""Token usage, in the AI SDK V2 shape."""

from __future__ import annotations

import math
from typing import Any

from sluicegate.messages.part import to_snake
from sluicegate.stream.payload import Payload


class Usage(Payload):
    """Token counts of one model call, or a sum of several."""

    input_tokens: int
    output_tokens: int
    total_tokens: int

    def __init__(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        total_tokens: int | None = None,
        reasoning_tokens: int | None = None,
        cached_input_tokens: int | None = None,
    ) -> None:
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.total_tokens = input_tokens + output_tokens if total_tokens is None else total_tokens
        self.reasoning_tokens = reasoning_tokens
        self.cached_input_tokens = cached_input_tokens
        self.unusable: str | None = None
        """Why the provider's reported counts could not be used (they read as 0), or None."""

    @classmethod
    def from_v2(cls, data: Any) -> Usage:
        """Read `{"inputTokens", "outputTokens", "totalTokens", ...}` (missing counts are 0)."""
        if isinstance(data, Usage):
            return data
        if not isinstance(data, dict):
            return cls()
        problems: list[str] = []
        input_tokens = _count(data, "inputTokens", problems) or 0
        output_tokens = _count(data, "outputTokens", problems) or 0
        total = _count(data, "totalTokens", problems)
        usage = cls(
            input_tokens,
            output_tokens,
            total if total is not None else input_tokens + output_tokens,
            _count(data, "reasoningTokens", problems),
            _count(data, "cachedInputTokens", problems),
        )
        if problems:
            usage.unusable = ", ".join(problems)
        return usage

    def __add__(self, other: Usage) -> Usage:
        def both(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
            both(self.reasoning_tokens, other.reasoning_tokens),
            both(self.cached_input_tokens, other.cached_input_tokens),
        )

    def to_v2(self) -> dict[str, Any]:
        return self.to_dict()


def _count(data: dict[str, Any], key: str, problems: list[str]) -> int | None:
    """A provider's token count, checked where usage enters: a negative, NaN, infinite or
    non-numeric count reads as 0 and is named in `problems`, so no total, price, span or JSON
    body downstream ever carries it (the cost guard treats such usage as unknown)."""
    value = data.get(key)
    if value is None:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value < 0:
        problems.append(f"{to_snake(key)} is {value!r}")
        return 0
    return int(value)
