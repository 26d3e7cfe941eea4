"""StreamErrorRetryProcessor end to end: errors raised by the call or streamed after it started
are retried when transient, within `max_retries`, after `delay_ms`."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import APICallError
from sluicegate.processors import StreamErrorRetryProcessor, is_retryable_openai_responses_stream_error
from sluicegate.processors.args import ProcessAPIErrorArgs
from sluicegate.testing import MockModel, text_step

OPENAI_SERVER_ERROR = {
    "type": "error",
    "sequence_number": 1,
    "error": {"type": "server_error", "code": "internal_error", "message": "An internal error occurred."},
}


def failing_stream(error: Any, text: str = "partial ") -> list[dict[str, Any]]:
    """A stream that starts, emits some text, then reports `error` as an error part."""
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": text},
        {"type": "error", "error": error},
    ]


def transient(message: str = "upstream overloaded") -> APICallError:
    return APICallError(message, status_code=529, is_retryable=True, url="https://api.example/v1")


async def test_retries_an_error_streamed_after_the_start() -> None:
    model = MockModel([failing_stream(transient()), text_step("complete answer")])
    agent = Agent(name="a", instructions="x", model=model, error_processors=[StreamErrorRetryProcessor()])
    output = await agent.stream("hi")
    chunks = [c async for c in output.full_stream]
    assert "error" not in [c.type for c in chunks]
    assert [c.payload.step_result.reason for c in chunks if c.type == "step-finish"] == ["retry", "stop"]
    assert await output.finish_reason == "stop"
    assert len(model.calls) == 2
    assert model.calls[0].prompt == model.calls[1].prompt  # messages are never changed


async def test_retries_an_openai_responses_error_event_by_default() -> None:
    # A raw (non-exception) error value: the loop wraps it in APICallError(data=event).
    model = MockModel([failing_stream(OPENAI_SERVER_ERROR), text_step("ok")])
    agent = Agent(name="a", instructions="x", model=model, error_processors=[StreamErrorRetryProcessor()])
    assert (await agent.generate("hi")).text == "ok"


async def test_does_not_retry_a_non_transient_error() -> None:
    invalid = {
        "type": "error",
        "error": {"type": "invalid_request_error", "code": "invalid_prompt", "message": "Invalid prompt."},
    }
    model = MockModel([failing_stream(invalid), text_step("never")])
    agent = Agent(name="a", instructions="x", model=model, error_processors=[StreamErrorRetryProcessor()])
    output = await agent.stream("hi")
    chunks = [c async for c in output.full_stream]
    assert [c.type for c in chunks][-3:] == ["error", "step-finish", "finish"]
    assert len(model.calls) == 1


async def test_non_retryable_api_errors_are_raised() -> None:
    model = MockModel([APICallError("bad request", status_code=400, is_retryable=False), text_step("never")])
    agent = Agent(name="a", instructions="x", model=model, error_processors=[StreamErrorRetryProcessor()])
    with pytest.raises(APICallError, match="bad request"):
        await agent.generate("hi")
    assert len(model.calls) == 1


@pytest.mark.parametrize("max_retries", [1, 3])
async def test_max_retries_bounds_the_attempts(max_retries: int) -> None:
    model = MockModel([transient() for _ in range(5)] + [text_step("late")])
    agent = Agent(
        name="a",
        instructions="x",
        model=model,
        error_processors=[StreamErrorRetryProcessor(max_retries=max_retries)],
    )
    with pytest.raises(APICallError):
        await agent.generate("hi")
    assert len(model.calls) == max_retries + 1


async def test_custom_matchers_and_the_cause_chain() -> None:
    def is_connection_reset(error: Any) -> bool:
        return isinstance(error, ConnectionResetError)

    wrapped = RuntimeError("stream broke")
    wrapped.__cause__ = ConnectionResetError("ECONNRESET")
    model = MockModel([wrapped, text_step("recovered")])
    agent = Agent(
        name="a",
        instructions="x",
        model=model,
        error_processors=[StreamErrorRetryProcessor(matchers=[is_connection_reset])],
    )
    assert (await agent.generate("hi")).text == "recovered"

    plain = MockModel([RuntimeError("stream broke"), text_step("never")])
    without = Agent(name="b", instructions="x", model=plain, error_processors=[StreamErrorRetryProcessor()])
    with pytest.raises(RuntimeError):
        await without.generate("hi")


async def test_fixed_delay_waits_before_the_retry() -> None:
    model = MockModel([transient(), text_step("ok")])
    agent = Agent(
        name="a", instructions="x", model=model, error_processors=[StreamErrorRetryProcessor(delay_ms=150)]
    )
    started = time.monotonic()
    await agent.generate("hi")
    assert time.monotonic() - started >= 0.15


async def test_delay_callable_gets_the_error_args() -> None:
    seen: list[tuple[int, str]] = []

    async def backoff(args: ProcessAPIErrorArgs) -> float:
        seen.append((args.retry_count, str(args.error)))
        return 10 * 2**args.retry_count

    model = MockModel([transient("first"), transient("second"), text_step("ok")])
    agent = Agent(
        name="a",
        instructions="x",
        model=model,
        error_processors=[StreamErrorRetryProcessor(max_retries=2, delay_ms=backoff)],
    )
    assert (await agent.generate("hi")).text == "ok"
    assert seen == [(0, "first"), (1, "second")]


async def test_negative_delay_counts_as_zero() -> None:
    processor = StreamErrorRetryProcessor(delay_ms=-50)
    model = MockModel([transient(), text_step("ok")])
    agent = Agent(name="a", instructions="x", model=model, error_processors=[processor])
    started = time.monotonic()
    assert (await agent.generate("hi")).text == "ok"
    assert time.monotonic() - started < 1


def test_openai_responses_matcher() -> None:
    assert is_retryable_openai_responses_stream_error(OPENAI_SERVER_ERROR)
    assert is_retryable_openai_responses_stream_error(
        {
            "type": "response.failed",
            "response": {
                "error": {
                    "code": "unknown_error",
                    "message": "An error occurred. You can retry your request, or contact us.",
                }
            },
        }
    )
    assert is_retryable_openai_responses_stream_error(
        {"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}
    )
    assert not is_retryable_openai_responses_stream_error(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "code": "invalid_prompt",
                "message": "Invalid prompt.",
            },
        }
    )
    assert not is_retryable_openai_responses_stream_error({"status": 503})
    assert not is_retryable_openai_responses_stream_error("error")


def test_status_codes_without_metadata_are_not_retried() -> None:
    error = RuntimeError("wrapped")
    error.__cause__ = Exception("503")
    assert not StreamErrorRetryProcessor().is_retryable(error)
    assert StreamErrorRetryProcessor().is_retryable(APICallError("x", is_retryable=True))
    assert StreamErrorRetryProcessor().is_retryable(APICallError("x", cause=transient()))
