from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluicegate import Agent
from sluicegate.errors import TripWire
from sluicegate.messages import Message, MessageList, to_prompt_messages
from sluicegate.processors import (
    ProcessInputStepArgs,
    ProcessLLMRequestArgs,
    Processor,
    TokenLimiter,
    TokenLimiterProcessor,
)
from sluicegate.processors.builtin.prompt_tokens import TOKENS_PER_CONVERSATION, TOKENS_PER_MESSAGE
from sluicegate.processors.builtin.token_limiter import (
    _units_newest_first,
)
from sluicegate.request_context import RequestContext
from sluicegate.testing import MockModel, text_step
from sluicegate.tokens import get_encoding


def history(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i} about things"}
        for i in range(n)
    ]


def prompt_texts(prompt: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for m in prompt if m["role"] != "system" for p in m["content"] if p["type"] == "text"]


def test_both_names_and_positional_limit() -> None:
    assert TokenLimiter is TokenLimiterProcessor
    assert TokenLimiter(127000).limit == 127000
    assert TokenLimiter(limit=50).limit == 50
    with pytest.raises(ValueError):
        TokenLimiter(0)


def test_counts_are_real_tiktoken_counts_with_framing() -> None:
    limiter = TokenLimiter(100, encoding="cl100k_base")
    counter = limiter.counter()
    message = Message.text_message("user", "hello world")
    assert counter.message(message) == TOKENS_PER_MESSAGE + len(
        get_encoding("cl100k_base").encode("hello world")
    )
    assert counter.text("hello world") == 2


def test_encoding_option_and_model_default() -> None:
    text = "Привет, как дела? 你好世界 — ﬁne 😀 " * 3
    o200k = TokenLimiter(10).counter("gpt-4o").count(text)
    cl100k = TokenLimiter(10).counter("gpt-4").count(text)
    assert o200k == len(get_encoding("o200k_base").encode(text))
    assert cl100k == len(get_encoding("cl100k_base").encode(text))
    assert o200k != cl100k
    assert TokenLimiter(10, encoding="cl100k_base").counter("gpt-4o").count(text) == cl100k


def test_part_counts_are_cached() -> None:
    counter = TokenLimiter(10).counter()
    calls = 0
    real = counter._encode

    def counting(text: str) -> list[int]:
        nonlocal calls
        calls += 1
        return real(text)

    counter._encode = counting  # type: ignore[misc]
    message = Message.text_message("user", "count me once")
    counter.message(message)
    counter.message(message)
    assert calls == 1


async def test_input_drops_oldest_and_keeps_system_and_newest_user() -> None:
    model = MockModel([text_step("ok")])
    counter = TokenLimiter(1).counter("mock")
    msgs = [*history(20), {"role": "user", "content": "the newest question"}]
    per = [counter.message(Message.coerce(m)) for m in msgs]
    system_cost = counter.system("be brief")
    limit = system_cost + TOKENS_PER_CONVERSATION + sum(per[-5:])
    agent = Agent(name="t", model=model, instructions="be brief", input_processors=[TokenLimiter(limit)])
    await agent.generate(msgs)
    prompt = model.calls[0].prompt
    assert prompt[0] == {"role": "system", "content": "be brief"}
    assert prompt_texts(prompt) == [m["content"] for m in msgs[-5:]]


async def test_newest_user_message_is_pinned_when_later_messages_do_not_fit() -> None:
    model = MockModel([text_step("ok")])
    msgs = [
        {"role": "user", "content": "old"},
        {"role": "assistant", "content": "old answer"},
        {"role": "user", "content": "question"},
        {"role": "assistant", "content": "x " * 400},
    ]
    counter = TokenLimiter(1).counter("mock")
    limit = TOKENS_PER_CONVERSATION + counter.message(Message.coerce(msgs[2])) + 5
    agent = Agent(name="t", model=model, input_processors=[TokenLimiter(limit)])
    await agent.generate(msgs)
    assert prompt_texts(model.calls[0].prompt) == ["question"]


async def test_tool_call_and_result_are_dropped_together() -> None:
    call = {
        "role": "assistant",
        "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "lookup", "input": {"q": "x"}}],
    }
    result = {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "c1",
                "toolName": "lookup",
                "output": {"type": "json", "value": {"answer": "lorem ipsum " * 60}},
            }
        ],
    }
    msgs: list[Any] = [
        {"role": "user", "content": "first"},
        call,
        result,
        {"role": "user", "content": "next"},
    ]
    model = MockModel([text_step("ok")])
    limit = 40
    agent = Agent(name="t", model=model, input_processors=[TokenLimiter(limit)])
    await agent.generate(msgs)
    prompt = model.calls[0].prompt
    roles = [m["role"] for m in prompt]
    assert "tool" not in roles and all(p["type"] != "tool-call" for m in prompt for p in m["content"])
    assert prompt_texts(prompt)[-1] == "next"


async def test_tripwire_when_system_messages_alone_exceed_limit() -> None:
    model = MockModel([text_step("ok")])
    agent = Agent(name="t", model=model, instructions="word " * 100, input_processors=[TokenLimiter(20)])
    result = await agent.generate("hi")
    assert result.tripwire is not None and "System messages alone" in result.tripwire.reason
    assert result.finish_reason == "other" and model.calls == []


async def test_tripwire_when_no_messages() -> None:
    class DropAll(Processor):
        id = "drop-all"

        def process_input(self, args: Any) -> Any:
            return {"messages": []}

    model = MockModel([text_step("ok")])
    agent = Agent(name="t", model=model, input_processors=[DropAll(), TokenLimiter(100)])
    result = await agent.generate("hi")
    assert result.tripwire is not None and "No messages" in result.tripwire.reason


WORDS = ["one", " two", " three", " four", " five", " six", " seven", " eight"]


def stream_model() -> MockModel:
    step = text_step("".join(WORDS))
    deltas = [{"type": "text-delta", "id": "t1", "delta": word} for word in WORDS]
    return MockModel([[*step[:2], *deltas, *step[3:]]])


async def test_output_truncate_cumulative_stream(collect: Any) -> None:
    agent = Agent(name="t", model=stream_model(), output_processors=[TokenLimiter(3)])
    chunks = await collect(await agent.stream("go"))
    text = "".join(c.payload.text for c in chunks if c.type == "text-delta")
    assert text == "one two three"
    assert [c.data["limit"] for c in chunks if c.type == "data-token-limit-reached"] == [3]
    assert chunks[-1].type == "finish"


async def test_output_part_mode_counts_each_chunk(collect: Any) -> None:
    agent = Agent(
        name="t", model=stream_model(), output_processors=[TokenLimiter(limit=2, count_mode="part")]
    )
    chunks = await collect(await agent.stream("go"))
    assert (
        "".join(c.payload.text for c in chunks if c.type == "text-delta")
        == "one two three four five six seven eight"
    )


async def test_output_abort_strategy() -> None:
    agent = Agent(name="t", model=stream_model(), output_processors=[TokenLimiter(limit=3, strategy="abort")])
    result = await agent.generate("go")
    assert result.tripwire is not None and "Token limit of 3 exceeded" in result.tripwire.reason


async def test_non_stream_result_is_truncated() -> None:
    model = MockModel([text_step("alpha beta gamma delta epsilon")])
    agent = Agent(name="t", model=model, output_processors=[TokenLimiter(limit=2)])
    result = await agent.generate("go")
    assert result.text == "alpha beta"
    assert [m.text for m in result.response.messages if m.role == "assistant"] == ["alpha beta"]


# ---------------------------------------------------------------------- speed paths stay exact


def forward_units(messages: list[dict[str, Any]]) -> list[list[int]]:
    """The grouping rule, written the obvious way (oldest first), as the reference."""
    units: list[list[int]] = []
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        ids = {p["toolCallId"] for p in message["content"] if p["type"] in ("tool-call", "tool-result")}
        if message["role"] == "tool" and units and open_calls and ids & open_calls:
            units[-1].append(index)
            continue
        units.append([index])
        open_calls = ids if message["role"] == "assistant" else set()
    return units


def tool_call(call_ids: list[str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool-call", "toolCallId": c, "toolName": "t", "input": {}} for c in call_ids],
    }


def tool_result(call_id: str) -> dict[str, Any]:
    return {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": call_id,
                "toolName": "t",
                "output": {"type": "json", "value": 1},
            }
        ],
    }


MESSAGE_KINDS = st.one_of(
    st.just(("user", None)),
    st.just(("assistant", None)),
    st.tuples(st.just("call"), st.lists(st.sampled_from("abc"), min_size=1, max_size=2, unique=True)),
    st.tuples(st.just("result"), st.sampled_from("abcd")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(MESSAGE_KINDS, max_size=14))
def test_units_newest_first_match_the_forward_grouping(kinds: list[tuple[str, Any]]) -> None:
    messages: list[dict[str, Any]] = []
    for kind, value in kinds:
        if kind == "call":
            messages.append(tool_call(value))
        elif kind == "result":
            messages.append(tool_result(value))
        else:
            messages.append({"role": kind, "content": [{"type": "text", "text": "x"}]})
    got = [list(range(a, b + 1)) for a, b in _units_newest_first(messages)]
    assert got[::-1] == forward_units(messages)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_text_bound_never_undercounts(text: str) -> None:
    counter = TokenLimiter(1).counter("gpt-4o")
    assert counter.text_bound(text) >= counter.count(text)
    assert counter.text_bound(text) >= 0


def run_input_step(limiter: TokenLimiterProcessor, messages: list[Message]) -> list[str]:
    """The texts of the prompt the limiter lets through (both of its input hooks, in order)."""
    message_list = MessageList()
    message_list.add(messages, "memory")
    state: dict[str, Any] = {}
    common: dict[str, Any] = {"abort": _abort, "request_context": RequestContext(), "state": state}
    limiter.process_input_step(ProcessInputStepArgs(**common, message_list=message_list, model=None))
    prompt = message_list.get.all.model()
    result = limiter.process_llm_request(
        ProcessLLMRequestArgs(**common, prompt=prompt, message_list=message_list, model=None)
    )
    if result is not None and result.prompt is not None:
        prompt = result.prompt
    assert len(message_list) == len(messages)  # the run's messages keep everything
    return [p["text"] for m in prompt for p in m["content"] if p["type"] == "text"]


def _abort(reason: str | None = None, **_: Any) -> None:
    raise TripWire(reason or "")


def counting_encoder(limiter: TokenLimiterProcessor) -> list[str]:
    counter = limiter.counter()
    seen: list[str] = []
    real = counter._encode

    def counting(text: str) -> list[int]:
        seen.append(text)
        return real(text)

    counter._encode = counting  # type: ignore[misc]
    return seen


def long_history(n: int) -> list[Message]:
    return [
        Message.text_message("user" if i % 2 == 0 else "assistant", f"message {i} " * 5) for i in range(n)
    ]


def test_a_history_that_fits_is_kept_without_tokenizing() -> None:
    messages = long_history(200)
    limiter = TokenLimiter(10_000_000)
    encoded = counting_encoder(limiter)
    assert run_input_step(limiter, messages) == [m.text for m in messages]
    assert encoded == []


def test_only_the_newest_messages_that_can_fit_are_tokenized() -> None:
    messages = long_history(500)
    limiter = TokenLimiter(300)
    encoded = counting_encoder(limiter)
    kept = run_input_step(limiter, messages)
    assert 0 < len(kept) < 100
    assert kept == [m.text for m in messages[-len(kept) :]]
    assert len(kept) <= len(encoded) <= len(kept) + 2  # the kept ones and the first that did not fit


def test_the_limit_is_exact_at_the_boundary() -> None:
    messages = long_history(30)
    counter = TokenLimiter(1).counter()
    total = sum(counter.message(m) for m in messages) + TOKENS_PER_CONVERSATION
    # Untokenized, the byte bound is above the limit: only exact counting decides.
    bound = TokenLimiter(1).counter().prompt_message_bound
    assert sum(bound(m) for m in to_prompt_messages(messages)) > total
    assert run_input_step(TokenLimiter(total), messages) == [m.text for m in messages]
    assert run_input_step(TokenLimiter(total - 1), messages) == [m.text for m in messages[1:]]
