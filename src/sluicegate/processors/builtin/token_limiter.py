"""`TokenLimiter`: keep the prompt inside a context window, and cap how much the model may say.

Counts are real tiktoken counts (see `sluicegate.tokens`), cached per message part so a long
history is tokenized once, not once per step.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any, Literal

import tiktoken

from sluicegate.messages import Message
from sluicegate.processors.args import ProcessInputStepArgs, ProcessOutputResultArgs, ProcessOutputStreamArgs
from sluicegate.processors.base import Processor
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

TOKENS_PER_MESSAGE = 4
"""Framing of one chat message: OpenAI's 3 tokens per message plus the role's token."""
TOKENS_PER_CONVERSATION = 3
"""The tokens that prime the assistant's reply."""
TOKENS_PER_IMAGE = 765
"""Providers bill an image at a near-flat rate; its encoded size says little."""
BYTES_PER_TOKEN = 4
"""For non-image files, whose decoded bytes are usually text-like."""

_CACHE_LIMIT = 200_000
_MODEL_ID_KEY = "model_id"


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


class PartTokenCounter:
    """Token counts of message parts for one encoding, remembered between calls.

    Text is cached by its string (a repeated step finds the same string objects, whose hash
    Python keeps); tool invocations by identity, re-counted when their args, result or model
    output object changes.
    """

    __slots__ = ("_encode", "_invocations", "_texts", "encoding")

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding
        self._encode = encoding.encode_ordinary
        self._texts: dict[str, int] = {}
        self._invocations: dict[int, tuple[Any, Any, Any, Any, Any, int]] = {}

    def text(self, text: str) -> int:
        count = self._texts.get(text)
        if count is None:
            if len(self._texts) >= _CACHE_LIMIT:
                self._texts.clear()
            count = self._texts[text] = len(self._encode(text))
        return count

    def invocation(self, inv: dict[str, Any]) -> int:
        """A completed tool call and its result: the call's name and arguments, plus the result
        as a separate tool message. Calls without a result never reach the model."""
        if inv.get("state") != "result":
            return 0
        args, result, model_output = inv.get("args"), inv.get("result"), inv.get("modelOutput")
        cached = self._invocations.get(id(inv))
        if (
            cached is not None
            and cached[0] is inv
            and cached[1] is args
            and cached[2] is result
            and cached[3] is model_output
            and cached[4] == inv.get("toolName")
        ):
            return cached[5]
        output = model_output if model_output is not None else result
        count = self.text(str(inv.get("toolName", "")))
        count += self.text(args if isinstance(args, str) else _json(args if args is not None else {}))
        count += (
            _file_tokens(output)
            if _is_media(output)
            else self.text(output if isinstance(output, str) else _json(output))
        )
        count += TOKENS_PER_MESSAGE  # the result travels in its own tool message
        if len(self._invocations) >= _CACHE_LIMIT:
            self._invocations.clear()
        self._invocations[id(inv)] = (inv, args, result, model_output, inv.get("toolName"), count)
        return count

    def message(self, message: Message) -> int:
        """Tokens `message` costs in the prompt, framing included."""
        total = TOKENS_PER_MESSAGE
        parts = message.content.parts
        if not parts:
            legacy = message.content.content
            return total + (self.text(legacy) if isinstance(legacy, str) else 0)
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                total += self.text(part.get("text") or "")
            elif kind == "tool-invocation":
                total += self.invocation(part["toolInvocation"])
            elif kind == "reasoning":
                total += self.text(part.get("text") or part.get("reasoning") or "")
            elif kind == "file":
                total += _file_tokens(part)
        return total

    def text_bound(self, text: str) -> int:
        """At least `text`'s token count, without tokenizing: the cached count when there is
        one, else its UTF-8 size (a byte-level BPE token is never shorter than one byte)."""
        count = self._texts.get(text)
        if count is not None:
            return count
        return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))

    def message_bound(self, message: Message) -> int:
        """At least `message.count`: exact for whatever is cached or is not text."""
        total = TOKENS_PER_MESSAGE
        parts = message.content.parts
        if not parts:
            legacy = message.content.content
            return total + (self.text_bound(legacy) if isinstance(legacy, str) else 0)
        bound = self.text_bound
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                total += bound(part.get("text") or "")
            elif kind == "tool-invocation":
                total += self.invocation(part["toolInvocation"])
            elif kind == "reasoning":
                total += bound(part.get("text") or part.get("reasoning") or "")
            elif kind == "file":
                total += _file_tokens(part)
        return total

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


def _tool_call_ids(message: Message) -> set[str]:
    return {
        p["toolInvocation"]["toolCallId"] for p in message.content.parts if p.get("type") == "tool-invocation"
    }


def _open_calls(message: Message) -> set[str]:
    """The calls a tool message may answer after `message`: an assistant message's tool calls."""
    if message.role != "assistant":
        return set()
    return _tool_call_ids(message)


def _units_newest_first(messages: list[Message]) -> Iterator[tuple[int, int]]:
    """`(first, last)` message indexes of each unit, newest first, so a caller that stops early
    never looks at old history. A unit is a message plus the `tool` messages right after it
    that answer its tool calls: a tool call is never separated from its result."""
    last = len(messages) - 1
    while last >= 0:
        if messages[last].role != "tool":
            yield last, last
            last -= 1
            continue
        head = last
        while head >= 0 and messages[head].role == "tool":
            head -= 1
        calls = _open_calls(messages[head]) if head >= 0 else set()
        answered = head + 1  # tool messages from here on stand alone (unanswered or orphaned)
        if calls:
            while answered <= last and _tool_call_ids(messages[answered]) & calls:
                answered += 1
        for index in range(last, answered - 1, -1):
            yield index, index
        if calls and answered > head + 1:
            yield head, answered - 1
            last = head - 1
        else:
            last = head


def _unit_tokens(counter: PartTokenCounter, messages: list[Message], unit: tuple[int, int]) -> int:
    message = counter.message
    return sum(message(messages[index]) for index in range(unit[0], unit[1] + 1))


def _fits(counter: PartTokenCounter, messages: list[Message], budget: int) -> bool:
    """Whether every message surely fits `budget`, from upper bounds of their counts (newest
    first, stopping as soon as the bound passes the budget). Then nothing is dropped, and no
    count is needed, so a long history that fits is never tokenized."""
    total = 0
    bound = counter.message_bound
    for index in range(len(messages) - 1, -1, -1):
        total += bound(messages[index])
        if total > budget:
            return False
    return True


class TokenLimiterProcessor(Processor):
    """Limits tokens on both sides of the model.

    As an input processor it runs before every step: system messages are always kept, the newest
    user message is always kept whole, and the oldest other messages are dropped until the prompt
    fits `limit` (a tool call is dropped together with its result). It aborts with a `TripWire`
    when there are no messages, or when the system messages alone (or with the newest user
    message) exceed the limit.

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

    def process_input_step(self, args: ProcessInputStepArgs) -> Any:
        model_id = model_id_of(args.model)
        args.state[_MODEL_ID_KEY] = model_id
        message_list = args.message_list
        messages = message_list.get.all.db()
        if not messages:
            args.abort(
                "TokenLimiterProcessor: No messages to process. Cannot send LLM a request with no messages."
            )
        counter = self.counter(model_id)
        system_tokens = sum(counter.system(m["content"]) for m in message_list.get_system_messages())
        if system_tokens + TOKENS_PER_CONVERSATION >= self.limit:
            args.abort(
                "TokenLimiterProcessor: System messages alone exceed token limit. "
                "Requests cannot be completed by removing system messages.",
                metadata={"system_tokens": system_tokens, "limit": self.limit},
            )
        budget = self.limit - system_tokens - TOKENS_PER_CONVERSATION
        if _fits(counter, messages, budget):
            return None  # the common case: nothing to drop, and nothing needed tokenizing

        # Newest units first, each counted exactly; counting stops at the first that does not fit.
        units = _units_newest_first(messages)
        seen: list[tuple[int, int]] = []
        anchor: tuple[int, int] | None = None
        for unit in units:
            seen.append(unit)
            if messages[unit[0]].role == "user":
                anchor = unit
                break
        remaining = budget
        if anchor is not None:
            remaining -= _unit_tokens(counter, messages, anchor)
        keep_from = len(messages)
        if remaining >= 0:
            for first, last in itertools.chain(seen, units):
                if (first, last) != anchor:
                    cost = _unit_tokens(counter, messages, (first, last))
                    if cost > remaining:
                        break
                    remaining -= cost
                keep_from = first
        kept_anchor = anchor is not None and remaining >= 0 and keep_from > anchor[0]
        if remaining < 0 or (keep_from == len(messages) and not kept_anchor):
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
        dropped = [m.id for m in messages[:keep_from]]
        if kept_anchor:
            anchor_ids = {m.id for m in messages[anchor[0] : anchor[1] + 1]}  # type: ignore[index]
            dropped = [mid for mid in dropped if mid not in anchor_ids]
        if not dropped:
            return None
        message_list.remove_by_ids(dropped)
        return message_list

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
            text = _json(part.payload.get("object", part.payload.get("value")))
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
