"""A misbehaving provider ends the run with the right error, fast, without blocking the event
loop, and without storing anything as a normal turn."""

from __future__ import annotations

import time
from typing import Any

import pytest

from models.fake_provider import FakeProvider, openai_sse
from sluicegate import Agent
from sluicegate.errors import APICallError
from sluicegate.memory import Memory
from sluicegate.models import OpenAICompatible
from sluicegate.processors import StreamErrorRetryProcessor

from .conftest import StallMonitor

PATH = "/v1/chat/completions"
MAX_STALL = 0.300
"""Worst loop lateness allowed: below every blocking wait these faults could cause (the 0.5 s
timeouts, a 1 s Retry-After), above what a busy 2-core machine adds to a 10 ms tick."""
THREAD = {"thread": "t-faults", "resource": "u-faults"}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def answer(text: str) -> list[Any]:
    return openai_sse([chunk({"role": "assistant", "content": text}), chunk({}, "stop")])


def agent_for(provider: FakeProvider, memory: Memory, **model_options: Any) -> Agent:
    model = OpenAICompatible("m", base_url=provider.url + "/v1", name="fake", **model_options)
    return Agent("faulty", instructions="Be brief.", model=model, memory=memory)


async def stored(memory: Memory) -> list[Any]:
    return await memory.recall(THREAD["thread"], resource_id=THREAD["resource"])


async def fails_with(agent: Agent, **options: Any) -> tuple[APICallError, float]:
    start = time.perf_counter()
    with pytest.raises(APICallError) as caught:
        await agent.generate("hello", memory=THREAD, **options)
    return caught.value, time.perf_counter() - start


async def test_connection_reset(provider: FakeProvider, memory: Memory, stalls: StallMonitor) -> None:
    provider.reply(PATH, reset=True)
    error, elapsed = await fails_with(agent_for(provider, memory), max_retries=0)
    assert error.is_retryable
    assert elapsed < 5
    assert stalls.max_stall < MAX_STALL
    assert await stored(memory) == []


async def test_hang_before_headers_hits_the_request_timeout(
    provider: FakeProvider, memory: Memory, stalls: StallMonitor
) -> None:
    provider.reply(PATH, delay=30, sse=answer("too late"))
    agent = agent_for(provider, memory, request_timeout=0.5)
    error, elapsed = await fails_with(agent, max_retries=0)
    assert "request_timeout" in str(error) and error.is_retryable
    assert 0.4 < elapsed < 3
    assert stalls.max_stall < MAX_STALL
    assert await stored(memory) == []


async def test_stream_that_goes_silent_hits_the_idle_timeout(
    provider: FakeProvider, memory: Memory, stalls: StallMonitor
) -> None:
    events = openai_sse([chunk({"content": "Hel"}), chunk({"content": "lo"}), chunk({}, "stop")])
    provider.reply(PATH, sse=events, stall_after=1, stall=30)
    agent = agent_for(provider, memory, stream_idle_timeout=0.5)
    error, elapsed = await fails_with(agent, max_retries=0)
    assert error.is_retryable
    assert 0.4 < elapsed < 3
    assert stalls.max_stall < MAX_STALL
    assert await stored(memory) == []


async def test_html_with_status_200_is_an_error(
    provider: FakeProvider, memory: Memory, stalls: StallMonitor
) -> None:
    provider.reply(PATH, raw=b"<html><body>Service Unavailable</body></html>")
    error, _ = await fails_with(agent_for(provider, memory), max_retries=0)
    assert "text/html" in str(error) and error.status_code == 200
    assert "Service Unavailable" in (error.response_body or "")
    assert stalls.max_stall < MAX_STALL
    assert await stored(memory) == []


async def test_json_error_body_with_status_200_is_an_error(
    provider: FakeProvider, memory: Memory, stalls: StallMonitor
) -> None:
    body = b'{"error": {"type": "invalid_request_error", "message": "model not found"}}'
    provider.reply(PATH, raw=body, content_type="application/json")
    error, _ = await fails_with(agent_for(provider, memory), max_retries=0)
    assert str(error) == "model not found"
    assert not error.is_retryable
    assert stalls.max_stall < MAX_STALL
    assert await stored(memory) == []


async def test_truncated_event_stream_is_an_error(
    provider: FakeProvider, memory: Memory, stalls: StallMonitor
) -> None:
    # The connection closes cleanly after half an answer: no finish_reason, no [DONE].
    provider.reply(PATH, sse=[(None, chunk({"content": "The answer is"}))])
    error, _ = await fails_with(agent_for(provider, memory), max_retries=0)
    assert "ended before" in str(error) and error.is_retryable
    assert stalls.max_stall < MAX_STALL
    assert await stored(memory) == []


async def test_429_retry_after_is_honoured_by_default(
    provider: FakeProvider, memory: Memory, stalls: StallMonitor
) -> None:
    provider.reply(PATH, status=429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "1"})
    provider.reply(PATH, sse=answer("recovered"))
    start = time.perf_counter()
    result = await agent_for(provider, memory).generate("hello", memory=THREAD)
    elapsed = time.perf_counter() - start
    assert result.text == "recovered"
    assert 0.9 < elapsed < 5
    assert len(provider.bodies(PATH)) == 2
    assert stalls.max_stall < MAX_STALL
    assert [m.role for m in await stored(memory)] == ["user", "assistant"]


async def test_429_exhausting_retries_stores_nothing(
    provider: FakeProvider, memory: Memory, stalls: StallMonitor
) -> None:
    for _ in range(3):
        provider.reply(
            PATH, status=429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "0"}
        )
    error, _ = await fails_with(agent_for(provider, memory))
    assert error.status_code == 429
    assert len(provider.bodies(PATH)) == 3  # the first call and 2 default retries
    assert stalls.max_stall < MAX_STALL
    assert await stored(memory) == []


async def test_stream_error_retry_caps_a_long_retry_after(
    provider: FakeProvider, memory: Memory, stalls: StallMonitor
) -> None:
    provider.reply(
        PATH, status=429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "3600"}
    )
    provider.reply(PATH, sse=answer("after the wait"))
    agent = agent_for(provider, memory)
    start = time.perf_counter()
    result = await agent.generate(
        "hello",
        memory=THREAD,
        max_retries=0,
        error_processors=[StreamErrorRetryProcessor(max_retry_after_ms=300)],
    )
    elapsed = time.perf_counter() - start
    assert result.text == "after the wait"
    assert 0.25 < elapsed < 3
    assert stalls.max_stall < MAX_STALL
