"""`StreamErrorRetryProcessor`'s Mastra options: Retry-After (capped by `max_retry_after_ms`),
`retry_unknown_errors`, matcher dicts with their own policy (validated), and the retry boundary
never leaking what a stream guardrail was holding back."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.processors import RegexFilter, StreamErrorRetryProcessor
from sluicegate.processors.args import ProcessAPIErrorArgs
from sluicegate.testing import MockModel, text_step


def rate_limited(headers: dict[str, str]) -> APICallError:
    return APICallError("rate limited", status_code=429, is_retryable=True, response_headers=headers)


def agent_with(model: MockModel, processor: StreamErrorRetryProcessor) -> Agent:
    return Agent("a", model=model, error_processors=[processor], max_retries=0)


async def timed_generate(agent: Agent) -> tuple[str, float]:
    start = time.perf_counter()
    text = (await agent.generate("hi")).text
    return text, time.perf_counter() - start


async def test_retry_after_ms_is_honoured() -> None:
    model = MockModel([rate_limited({"retry-after-ms": "300"}), text_step("ok")])
    text, elapsed = await timed_generate(agent_with(model, StreamErrorRetryProcessor()))
    assert text == "ok" and elapsed >= 0.3


async def test_retry_after_is_capped_by_max_retry_after_ms() -> None:
    model = MockModel([rate_limited({"Retry-After": "3600"}), text_step("ok")])
    text, elapsed = await timed_generate(agent_with(model, StreamErrorRetryProcessor(max_retry_after_ms=200)))
    assert text == "ok" and 0.2 <= elapsed < 2


async def test_the_longer_of_delay_ms_and_retry_after_wins() -> None:
    model = MockModel([rate_limited({"retry-after-ms": "50"}), text_step("ok")])
    text, elapsed = await timed_generate(agent_with(model, StreamErrorRetryProcessor(delay_ms=250)))
    assert text == "ok" and elapsed >= 0.25


async def test_retry_unknown_errors() -> None:
    model = MockModel([RuntimeError("socket closed"), text_step("ok")])
    assert (
        await agent_with(model, StreamErrorRetryProcessor(retry_unknown_errors=True)).generate("hi")
    ).text == "ok"
    model = MockModel([RuntimeError("socket closed"), text_step("never")])
    with pytest.raises(RuntimeError):
        await agent_with(model, StreamErrorRetryProcessor()).generate("hi")


@pytest.mark.parametrize(
    "error",
    [
        APICallError("unauthorized", status_code=401),
        APICallError("denied", status_code=400, response_body='{"error": {"code": "invalid_api_key"}}'),
    ],
)
async def test_unknown_errors_exclude_authorization_failures(error: APICallError) -> None:
    model = MockModel([error, text_step("never")])
    with pytest.raises(APICallError):
        await agent_with(model, StreamErrorRetryProcessor(retry_unknown_errors=True)).generate("hi")
    assert len(model.calls) == 1


async def test_matcher_dicts_carry_their_own_policy() -> None:
    seen: list[tuple[int, float]] = []

    def on_retry(args: ProcessAPIErrorArgs, delay_ms: float) -> None:
        seen.append((args.retry_count, delay_ms))

    bad_request = {"match": lambda e: getattr(e, "status_code", None) == 400, "maxRetries": 2, "delayMs": 10}
    processor = StreamErrorRetryProcessor(matchers=[{**bad_request, "onRetry": on_retry}])
    errors: list[Any] = [APICallError("flaky", status_code=400) for _ in range(2)]
    model = MockModel([*errors, text_step("ok")])
    assert (await agent_with(model, processor).generate("hi")).text == "ok"
    assert seen == [(0, 10.0), (1, 10.0)]  # the matcher's 2 retries, not the processor's 1

    zero = StreamErrorRetryProcessor(matchers=[{"match": lambda e: True, "max_retries": 0}])
    model = MockModel([APICallError("x", is_retryable=True), text_step("never")])
    with pytest.raises(APICallError):
        await agent_with(model, zero).generate("hi")


@pytest.mark.parametrize(
    "options",
    [
        {"matchers": [{"match": lambda e: True, "max_retry": 2}]},  # a typo'd key
        {"matchers": [{"maxRetries": 2}]},  # no match
        {"matchers": [{"match": "overloaded"}]},  # not callable
        {"matchers": [42]},
        {"matchers": {"match": lambda e: True}},  # a dict, not a list of them
        {"max_retries": -1},
        {"delay_ms": "1000"},
        {"retry_unknown_errors": "yes"},
        {"max_retry_after_ms": None},
    ],
)
def test_options_it_does_not_understand_are_rejected(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        StreamErrorRetryProcessor(**options)


async def test_a_card_number_cut_by_a_failed_attempt_never_leaks() -> None:
    failed_attempt = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "Your card is 4111 1111 "},
        {"type": "error", "error": APICallError("overloaded", status_code=529, is_retryable=True)},
    ]
    answer = text_step("Your card is 4111 1111 1111 1111.")
    agent = Agent(
        "a",
        model=MockModel([failed_attempt, answer]),
        output_processors=[RegexFilter(presets=["pii"], strategy="redact")],
        error_processors=[StreamErrorRetryProcessor()],
    )
    output = await agent.stream("hi")
    streamed = "".join([c.payload.text async for c in output.full_stream if c.type == "text-delta"])
    assert "4111 1111" not in streamed
    assert "Your card is" in streamed
