"""`ToolResultTokenLimiter`: cap each tool result before the history, the stream and the next
model call see it, so one oversized result cannot crowd the conversation out of the context
window (or, with `TokenLimiter`, stop the run)."""

from __future__ import annotations

import tiktoken

from sluicegate.errors import ConfigurationError
from sluicegate.processors.args import ProcessToolResultArgs, ProcessToolResultResult
from sluicegate.processors.base import Processor
from sluicegate.processors.builtin.prompt_tokens import PartTokenCounter, compact_json
from sluicegate.tokens import DEFAULT_ENCODING, resolve_encoding

MIN_LIMIT = 64
"""The smallest limit: room for the marker and a useful slice of the result."""


def _marker(kept: int, total: int) -> str:
    return f"\n[truncated: showing {kept:,} of {total:,} tokens]"


class ToolResultTokenLimiter(Processor):
    """Cuts every tool result longer than `limit` tokens, marker included, to its first tokens
    plus a marker such as `[truncated: showing 1,990 of 18,400 tokens]`.

    The cut result replaces the original everywhere (the `tool-result` chunk, the history, the
    next prompt and the run's steps), so the model is told it saw only part. A result that is
    not a string is measured and cut as its compact JSON text, and a cut one becomes that text
    (a string) with the marker. Results of provider-executed tools are left alone: the provider
    already holds them.

    `encoding` is a tiktoken encoding name or a `tiktoken.Encoding` (default `"o200k_base"`).

    Example::

        agent = Agent(name="a", model="openai/gpt-4o", tools=[search],
                      output_processors=[ToolResultTokenLimiter(2000)],
                      input_processors=[TokenLimiter(127000)])
    """

    id = "tool-result-token-limiter"
    name = "ToolResultTokenLimiter"

    def __init__(self, limit: int | None = None, *, encoding: str | tiktoken.Encoding | None = None) -> None:
        super().__init__()
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < MIN_LIMIT:
            raise ConfigurationError(
                f"ToolResultTokenLimiter: limit must be an integer of at least {MIN_LIMIT}, got {limit!r}"
            )
        if encoding is not None and not isinstance(encoding, (str, tiktoken.Encoding)):
            raise ConfigurationError(
                "ToolResultTokenLimiter: encoding must be an encoding name or a tiktoken.Encoding, "
                f"got {encoding!r}"
            )
        try:
            resolved = resolve_encoding(encoding or DEFAULT_ENCODING)  # loads now, not mid-request
        except ValueError as error:
            raise ConfigurationError(f"ToolResultTokenLimiter: encoding {encoding!r}: {error}") from error
        self.limit = limit
        self.encoding = encoding
        self.counter = PartTokenCounter(resolved)

    def process_tool_result(self, args: ProcessToolResultArgs) -> ProcessToolResultResult | None:
        result = args.result
        if args.provider_executed or result is None:
            return None
        text = result if isinstance(result, str) else compact_json(result)
        counter = self.counter
        if counter.text_bound(text) <= self.limit:
            return None  # surely short enough: no tokenizing
        total = counter.count(text)
        if total <= self.limit:
            return None
        return ProcessToolResultResult(result=self.cut(text, total))

    def cut(self, text: str, total: int) -> str:
        """The longest prefix of `text` that fits `limit` together with its marker. Counts of
        joined strings are not additive, so the joined text is measured and the prefix shrunk
        by the overshoot until it fits."""
        counter = self.counter
        budget = self.limit - counter.count(_marker(total, total))
        while budget > 0:
            prefix = counter.truncate(text, budget)
            candidate = prefix + _marker(counter.count(prefix), total)
            over = counter.count(candidate) - self.limit
            if over <= 0:
                return candidate
            budget -= over
        return _marker(0, total).lstrip()
