"""Token usage, in the AI SDK V2 shape."""

from __future__ import annotations

from typing import Any

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

    @classmethod
    def from_v2(cls, data: Any) -> Usage:
        """Read `{"inputTokens", "outputTokens", "totalTokens", ...}` (missing counts are 0)."""
        if isinstance(data, Usage):
            return data
        if not isinstance(data, dict):
            return cls()
        input_tokens = data.get("inputTokens") or 0
        output_tokens = data.get("outputTokens") or 0
        total = data.get("totalTokens")
        return cls(
            input_tokens,
            output_tokens,
            total if total is not None else input_tokens + output_tokens,
            data.get("reasoningTokens"),
            data.get("cachedInputTokens"),
        )

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
