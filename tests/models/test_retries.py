"""Pre-stream retries (on by default, like the AI SDK's `maxRetries: 2`) and `Retry-After`."""

from __future__ import annotations

import email.utils
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluicegate import Agent
from sluicegate.errors import APICallError
from sluicegate.models import retries
from sluicegate.models.retry_after import parse_retry_after, retry_after_ms
from sluicegate.testing import MockModel, text_step


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retries, "INITIAL_DELAY_MS", 10.0)


def overloaded() -> APICallError:
    return APICallError("overloaded", status_code=529, is_retryable=True)


async def test_retryable_errors_before_the_stream_are_retried_twice_by_default(fast_backoff: None) -> None:
    model = MockModel([overloaded(), overloaded(), text_step("third time")])
    result = await Agent("a", model=model).generate("hi")
    assert result.text == "third time" and len(model.calls) == 3
    assert [s.finish_reason for s in result.steps] == ["stop"]  # invisible to the caller

    model = MockModel([overloaded(), overloaded(), overloaded(), text_step("never")])
    with pytest.raises(APICallError):
        await Agent("a", model=model).generate("hi")
    assert len(model.calls) == 3


async def test_max_retries_option_and_non_retryable_errors(fast_backoff: None) -> None:
    model = MockModel([overloaded(), text_step("never")])
    with pytest.raises(APICallError):
        await Agent("a", model=model, max_retries=2).generate("hi", max_retries=0)
    assert len(model.calls) == 1

    model = MockModel([APICallError("bad request", status_code=400), text_step("never")])
    with pytest.raises(APICallError):
        await Agent("a", model=model).generate("hi")
    assert len(model.calls) == 1


async def test_retry_after_is_honoured_and_capped() -> None:
    busy = APICallError(
        "slow", status_code=429, is_retryable=True, response_headers={"retry-after-ms": "200"}
    )
    model = MockModel([busy, text_step("ok")])
    start = time.perf_counter()
    assert (await Agent("a", model=model).generate("hi")).text == "ok"
    assert 0.2 <= time.perf_counter() - start < 1.5  # not the 2 s backoff

    hostile = APICallError("slow", is_retryable=True, response_headers={"Retry-After": "86400"})
    assert retries.retry_delay_ms(hostile, 0) == 30_000


@given(st.integers(min_value=0, max_value=6), st.floats(min_value=0, max_value=1))
def test_backoff_is_exponential_with_bounded_jitter(attempt: int, draw: float) -> None:
    delay = retries.backoff_delay_ms(attempt, rng=lambda: draw)
    base = retries.INITIAL_DELAY_MS * retries.BACKOFF_FACTOR**attempt
    assert base / 2 <= delay <= base


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after("3", now) == 3000
    assert parse_retry_after(email.utils.formatdate(now + 5, usegmt=True), now) == pytest.approx(5000)
    assert parse_retry_after("-3", now) is None and parse_retry_after("1.5", now) is None
    assert parse_retry_after("yesterday", now) is None
    # Found through the cause chain; Retry-After-Ms wins over Retry-After.
    inner = APICallError("x", response_headers={"retry-after": "9", "Retry-After-Ms": "120"})
    assert retry_after_ms(RuntimeError("wrapped"), now) is None
    assert retry_after_ms(APICallError("outer", cause=inner), now) == 120
