"""`TokenLimiter`: keep the prompt inside a context window, and cap how much the model may say.

Counting lives in `prompt_tokens` (shared with `ToolResultTokenLimiter`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import tiktoken

from sluicegate.messages.convert import PromptMessage
from sluicegate.processors.args import (
    ProcessInputStepArgs,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessOutputResultArgs,
    ProcessOutputStreamArgs,
)
from sluicegate.processors.base import Processor
from sluicegate.processors.builtin.prompt_tokens import (
    TOKENS_PER_CONVERSATION,
    PartTokenCounter,
    compact_json,
)
from sluicegate.stream.chunk import Chunk, text_delta
from sluicegate.tokens import (
    DEFAULT_ENCODING,
    encoding_name_for_model,
    model_id_of,
    prefetch_encoding,
    resolve_encoding,
)

Strategy = Literal["truncate", "abort"]
CountMode = Literal["cumulative", "part"]

_MODEL_ID_KEY = "model_id"
_TOOL_PARTS = ("tool-call", "tool-result")
_INPUT_KEY = "input-limiter"
_HISTORY_KEY = "history-tool-call-ids"


def _call_ids(message: PromptMessage) -> set[str]:
    """The tool call ids a V2 prompt message carries (calls or results)."""
    content = message.get("content")
    if not isinstance(content, list):
        return set()
    return {p["toolCallId"] for p in content if p.get("type") in _TOOL_PARTS and "toolCallId" in p}


def _open_calls(message: PromptMessage) -> set[str]:
    """The calls a tool message may answer after `message`: an assistant message's tool calls."""
    if message.get("role") != "assistant":
        return set()
    return _call_ids(message)


def _units_newest_first(messages: list[PromptMessage]) -> Iterator[tuple[int, int]]:
    """`(first, last)` indexes of each unit, newest first, so a caller that stops early never
    looks at old history. A unit is a message plus the `tool` messages right after it that
    answer its tool calls: a tool call is never separated from its result."""
    last = len(messages) - 1
    while last >= 0:
        if messages[last].get("role") != "tool":
            yield last, last
            last -= 1
            continue
        head = last
        while head >= 0 and messages[head].get("role") == "tool":
            head -= 1
        calls = _open_calls(messages[head]) if head >= 0 else set()
        answered = head + 1  # tool messages from here on stand alone (unanswered or orphaned)
        if calls:
            while answered <= last and _call_ids(messages[answered]) & calls:
                answered += 1
        for index in range(last, answered - 1, -1):
            yield index, index
        if calls and answered > head + 1:
            yield head, answered - 1
            last = head - 1
        else:
            last = head


def _unit_tokens(counter: PartTokenCounter, messages: list[PromptMessage], unit: tuple[int, int]) -> int:
    count = counter.prompt_message
    return sum(count(messages[index]) for index in range(unit[0], unit[1] + 1))


def _unit_call_ids(messages: list[PromptMessage], unit: tuple[int, int]) -> set[str]:
    first, last = unit
    if first == last:
        message = messages[first]
        return _call_ids(message) if message.get("role") != "user" else set()
    ids: set[str] = set()
    for index in range(first, last + 1):
        ids |= _call_ids(messages[index])
    return ids


def _fits(counter: PartTokenCounter, messages: list[PromptMessage], budget: int) -> bool:
    """Whether every message surely fits `budget`, from upper bounds of their counts (newest
    first, stopping as soon as the bound passes the budget). Then nothing is dropped, and no
    count is needed, so a long history that fits is never tokenized."""
    total = 0
    bound = counter.prompt_message_bound
    for index in range(len(messages) - 1, -1, -1):
        total += bound(messages[index])
        if total > budget:
            return False
    return True


class TokenLimiterProcessor(Processor):
    """Limits tokens on both sides of the model.

    As an input processor it fits every model call's prompt (in `process_llm_request`, so it
    counts what the processors before it, such as `ToolCallFilter`, left; put it last). System
    messages are always kept, the newest user message is always kept whole, and so are the
    current run's tool calls and results (dropping them makes the model call the same tool
    again); then the newest other messages are kept while they fit and older ones are dropped
    from this call's prompt (a tool call always together with its result). The run's messages
    and memory keep everything. It aborts with a `TripWire` when there are no messages, when the
    system messages alone exceed the limit, when the run's own tool traffic does, or when not
    even the newest user message fits. Use it in `input_processors` directly: processor
    workflows do not run `process_llm_request`.

    As an output processor it caps generated text: `count_mode="cumulative"` counts the whole
    response, `"part"` each text chunk on its own; past the limit, `strategy="truncate"` cuts the
    text at the limit (telling the client once with a `data-token-limit-reached` chunk) and
    `"abort"` stops the run. Non-streamed results are truncated the same way.

    In cumulative mode the output limiter also caps the model call's `max_output_tokens` at the
    budget left (plus `output_token_margin`), so the model stops generating text that would be
    cut anyway. Providers count reasoning and tool-call tokens in that limit too: for reasoning
    models, or answers that call tools after long text, pass `cap_model_output=False`.

    `encoding` is a tiktoken encoding name (the bundled `"o200k_base"` and `"cl100k_base"`, or any
    name in tiktoken's registry, plugins included) or a `tiktoken.Encoding`; by default it follows
    the step's model (o200k_base for current OpenAI models, cl100k_base for GPT-4/3.5).

    Example::

        agent = Agent(
            name="a", model="openai/gpt-4o", input_processors=[TokenLimiter(127000)],
            output_processors=[TokenLimiter(limit=1000, strategy="truncate", count_mode="cumulative")],
        )
    """

    id = "token-limiter"
    name = "Token Limiter"

    def __init__(
        self,
        limit: int | None = None,
        *,
        strategy: Strategy = "truncate",
        count_mode: CountMode = "cumulative",
        encoding: str | tiktoken.Encoding | None = None,
        cap_model_output: bool = True,
        output_token_margin: int = 16,
    ) -> None:
        super().__init__()
        if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
            raise ValueError(f"TokenLimiter needs a positive integer limit, got {limit!r}")
        if strategy not in ("truncate", "abort"):
            raise ValueError(f"strategy must be 'truncate' or 'abort', got {strategy!r}")
        if count_mode not in ("cumulative", "part"):
            raise ValueError(f"count_mode must be 'cumulative' or 'part', got {count_mode!r}")
        self.limit = limit
        self.strategy: Strategy = strategy
        self.count_mode: CountMode = count_mode
        self.encoding = encoding
        if isinstance(encoding, str):
            resolve_encoding(encoding)  # an unknown name fails here; the rank file loads now, not mid-request
        elif encoding is None:
            prefetch_encoding(DEFAULT_ENCODING)  # off the event loop, before the first request
        elif not isinstance(encoding, tiktoken.Encoding):
            raise ValueError(f"encoding must be an encoding name or a tiktoken.Encoding, got {encoding!r}")
        if not isinstance(cap_model_output, bool):
            raise ValueError(f"cap_model_output must be a bool, got {cap_model_output!r}")
        if (
            not isinstance(output_token_margin, int)
            or isinstance(output_token_margin, bool)
            or output_token_margin < 0
        ):
            raise ValueError(
                f"output_token_margin must be a non-negative integer, got {output_token_margin!r}"
            )
        self.cap_model_output = cap_model_output
        self.output_token_margin = output_token_margin
        self._counters: dict[str, PartTokenCounter] = {}

    def counter(self, model_id: str | None = None) -> PartTokenCounter:
        """The (cached) counter for this processor's encoding, or the one `model_id` implies."""
        if isinstance(self.encoding, tiktoken.Encoding):
            key = f"object:{id(self.encoding)}"
        else:
            key = self.encoding or encoding_name_for_model(model_id)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = PartTokenCounter(resolve_encoding(self.encoding, model_id))
        return counter

    # ------------------------------------------------------------------ input

    def process_input_step(self, args: ProcessInputStepArgs) -> None:
        """Only marks this object as an input limiter for the request: the prompt is fitted in
        `process_llm_request`, which output processors get too."""
        args.state[_MODEL_ID_KEY] = model_id_of(args.model)
        args.state[f"{_INPUT_KEY}:{id(self)}"] = True

    def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        """Fits the outbound prompt, as the processors before this one left it (after a
        `ToolCallFilter`, say), so only what the model will really receive is counted. The
        change is for this call only: the run's messages and memory keep everything."""
        state = args.state
        model_id = model_id_of(args.model)
        state[_MODEL_ID_KEY] = model_id
        if not state.get(f"{_INPUT_KEY}:{id(self)}"):
            return None  # an output-only limiter leaves the prompt alone
        prompt = args.prompt
        history_key = f"{_HISTORY_KEY}:{id(self)}"
        if history_key not in state:
            # The request's first prompt: every tool call in it predates the run. Its ids are
            # collected only if a later call needs trimming.
            state[history_key] = list(prompt)
        messages = [m for m in prompt if m.get("role") != "system"]
        if not messages:
            args.abort(
                "TokenLimiterProcessor: No messages to process. Cannot send LLM a request with no messages."
            )
        counter = self.counter(model_id)
        system_tokens = sum(counter.prompt_message(m) for m in prompt if m.get("role") == "system")
        if system_tokens + TOKENS_PER_CONVERSATION >= self.limit:
            args.abort(
                "TokenLimiterProcessor: System messages alone exceed token limit. "
                "Requests cannot be completed by removing system messages.",
                metadata={"system_tokens": system_tokens, "limit": self.limit},
            )
        budget = self.limit - system_tokens - TOKENS_PER_CONVERSATION
        if _fits(counter, messages, budget):
            return None  # the common case: nothing to drop, and nothing needed tokenizing
        history = state[history_key]
        if isinstance(history, list):
            history = state[history_key] = {i for m in history for i in _call_ids(m)}
        kept = self._fit(args, counter, messages, history, budget, system_tokens)
        if kept is None:
            return None
        keep = {id(messages[i]) for first, last in kept for i in range(first, last + 1)}
        return ProcessLLMRequestResult(
            prompt=[m for m in prompt if m.get("role") == "system" or id(m) in keep]
        )

    def _fit(
        self,
        args: ProcessLLMRequestArgs,
        counter: PartTokenCounter,
        messages: list[PromptMessage],
        history: set[str],
        budget: int,
        system_tokens: int,
    ) -> list[tuple[int, int]] | None:
        """The units to send, or None when all of them are. Kept whatever it costs: the newest
        user message, and the run's own tool traffic (its calls and results: calls made in this
        request, and any call after the newest user message, such as one resumed after an
        approval). Evicting those makes the model ask for the same tool again, in a loop. The
        rest is kept newest first while it fits; everything older than the first unit that does
        not fit is dropped."""
        units = list(_units_newest_first(messages))  # structure only: nothing is tokenized here
        anchor = next((n for n, u in enumerate(units) if messages[u[0]].get("role") == "user"), None)
        pinned: set[int] = set()
        run_tokens = 0
        for n, unit in enumerate(units):
            ids = _unit_call_ids(messages, unit)
            if ids and ((anchor is not None and n < anchor) or not ids <= history):
                pinned.add(n)
                run_tokens += _unit_tokens(counter, messages, unit)
        if run_tokens > budget:
            args.abort(
                "TokenLimiterProcessor: The current run's tool calls and results alone exceed the "
                "token budget; they cannot be dropped without the model losing results it asked for. "
                "Cap tool results (ToolResultTokenLimiter) or raise the limit.",
                metadata={
                    "system_tokens": system_tokens,
                    "limit": self.limit,
                    "remaining_budget": budget,
                    "current_run_tokens": run_tokens,
                },
            )
        remaining = budget - run_tokens
        if anchor is not None:
            pinned.add(anchor)
            remaining -= _unit_tokens(counter, messages, units[anchor])
        if remaining >= 0:
            for n, unit in enumerate(units):
                if n in pinned:
                    continue
                cost = _unit_tokens(counter, messages, unit)
                if cost > remaining:
                    break
                remaining -= cost
                pinned.add(n)
        if remaining < 0 or not pinned:
            args.abort(
                "TokenLimiterProcessor: No messages fit within the remaining token budget. "
                "Cannot send LLM a request with no messages.",
                metadata={
                    "system_tokens": system_tokens,
                    "limit": self.limit,
                    "remaining_budget": budget,
                    "message_count": len(messages),
                },
            )
        if len(pinned) == len(units):
            return None
        return [units[n] for n in pinned]

    # ------------------------------------------------------------------ output

    def max_output_tokens_for(self, state: dict[str, Any]) -> int | None:
        """The `max_output_tokens` worth asking the model for: the cumulative budget left (the
        margin covers tokenizer differences between our count and the provider's)."""
        if not self.cap_model_output or self.count_mode != "cumulative":
            return None
        left = self.limit - int(state.get("current_tokens", 0))
        return max(1, left) + self.output_token_margin

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | None:
        part = args.part
        kind = part.type
        if kind == "text-delta":
            text = part.payload.text
        elif kind == "object":
            text = compact_json(part.payload.get("object", part.payload.get("value")))
        else:
            return part  # lifecycle, reasoning and tool traffic are neither counted nor withheld
        state = args.state
        counter = self.counter(state.get(_MODEL_ID_KEY))
        tokens = counter.count(text) if text else 0
        used = state.get("current_tokens", 0) if self.count_mode == "cumulative" else 0
        if used + tokens <= self.limit:
            if self.count_mode == "cumulative":
                state["current_tokens"] = used + tokens
            return part
        if self.strategy == "abort":
            args.abort(
                f"Token limit of {self.limit} exceeded (current: {used + tokens})",
                metadata={"limit": self.limit, "tokens": used + tokens},
            )
        kept = counter.truncate(text, self.limit - used) if kind == "text-delta" else ""
        if self.count_mode == "cumulative":
            state["current_tokens"] = self.limit
        if not state.get("limit_reached_notified") and args.writer is not None:
            state["limit_reached_notified"] = True
            try:
                await args.writer.custom(
                    {
                        "type": "data-token-limit-reached",
                        "data": {"processorId": self.id, "limit": self.limit, "tokens": used + tokens},
                    }
                )
            except Exception:  # a notification must never break the stream
                pass
        if not kept:
            return None
        return text_delta(part.run_id, part.payload.id, kept)

    def process_output_result(self, args: ProcessOutputResultArgs) -> Any:
        counter = self.counter(args.state.get(_MODEL_ID_KEY))
        used = 0
        changed = False
        for message in args.messages:
            if message.role != "assistant":
                continue
            for part in message.content.parts:
                if part.get("type") != "text" or not part.get("text"):
                    continue
                tokens = counter.count(part["text"])
                if self.count_mode == "part":
                    used = 0
                if used + tokens <= self.limit:
                    used += tokens
                    continue
                if self.strategy == "abort":
                    args.abort(
                        f"Token limit of {self.limit} exceeded (current: {used + tokens})",
                        metadata={"limit": self.limit, "tokens": used + tokens},
                    )
                part["text"] = counter.truncate(part["text"], self.limit - used)
                used = self.limit
                changed = True
            if changed:
                message.content.content = message.text
        return args.messages if changed else None


TokenLimiter = TokenLimiterProcessor
"""Mastra exports the processor under both names."""
