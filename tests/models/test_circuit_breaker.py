"""The circuit breaker: a fallback model that failed `failures` times in `window` seconds is
skipped for `cooldown` seconds, then one run tries it again; in process and on Redis."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from tests.cache.redis_server import RedisServer, free_port, start_redis

from sluicegate import Agent
from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.models import CircuitBreaker
from sluicegate.testing import MockModel, text_step


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def down() -> APICallError:
    return APICallError("Service unavailable", status_code=503, is_retryable=True)


def primary(steps: list[Any]) -> MockModel:
    return MockModel(steps, provider="mock", model_id="primary")


def backup(count: int) -> MockModel:
    return MockModel([text_step(f"backup {i}") for i in range(count)], provider="mock", model_id="backup")


# ---------------------------------------------------------------- the breaker on its own


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"failures": 0}, "failures must be a positive integer"),
        ({"failures": 1.5}, "failures must be a positive integer"),
        ({"failures": True}, "failures must be a positive integer"),
        ({"window": 0}, "window must be a positive number of seconds"),
        ({"cooldown": -1}, "cooldown must be a positive number of seconds"),
        ({"cooldown": float("inf")}, "cooldown must be a positive number of seconds"),
    ],
)
def test_bad_settings_are_configuration_errors(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        CircuitBreaker(**options)


def test_an_agent_rejects_what_is_not_a_breaker() -> None:
    with pytest.raises(ConfigurationError, match="circuit_breaker must be"):
        Agent("a", model="openai/gpt-5", circuit_breaker={"failures": 3})  # type: ignore[arg-type]


async def test_opens_after_failures_in_the_window_and_lets_one_probe_through_after_cooldown() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures=2, window=10, cooldown=30, clock=clock)
    await breaker.failed("m")
    clock.now += 11  # the first failure left the window
    await breaker.failed("m")
    assert await breaker.allows("m")
    await breaker.failed("m")
    assert not await breaker.allows("m")
    clock.now += 29
    assert not await breaker.allows("m")
    clock.now += 1
    assert await breaker.allows("m")  # the probe
    assert not await breaker.allows("m")  # only one
    await breaker.failed("m")  # the probe failed: a whole cooldown again
    clock.now += 29
    assert not await breaker.allows("m")
    clock.now += 1
    assert await breaker.allows("m")
    await breaker.succeeded("m")
    assert await breaker.allows("m") and await breaker.allows("m")


# ---------------------------------------------------------------- in an agent


async def test_an_open_circuit_sends_runs_straight_to_the_next_model() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures=2, window=60, cooldown=30, clock=clock)
    first = primary([down(), down(), text_step("primary is back")])
    second = backup(4)
    agent = Agent("a", model=[first, second], max_retries=0, circuit_breaker=breaker)
    for _ in range(3):
        assert (await agent.generate("hi")).text.startswith("backup")
    assert len(first.calls) == 2  # the third run skipped it
    clock.now += 30
    result = await agent.generate("hi")  # the probe
    assert result.text == "primary is back" and result.steps[0].model == "mock/primary"
    assert len(first.calls) == 3


async def test_the_last_model_is_tried_even_when_its_circuit_is_open() -> None:
    breaker = CircuitBreaker(failures=1, cooldown=60)
    only = primary([down(), text_step("still answers")])
    agent = Agent("a", model=only, max_retries=0, circuit_breaker=breaker)
    with pytest.raises(APICallError):
        await agent.generate("hi")
    assert (await agent.generate("hi")).text == "still answers"


async def test_a_request_error_does_not_count_against_the_model() -> None:
    breaker = CircuitBreaker(failures=1, cooldown=60)
    bad = APICallError("bad request", status_code=400)
    first = primary([bad, text_step("primary")])
    agent = Agent("a", model=[first, backup(1)], circuit_breaker=breaker)
    assert (await agent.generate("hi")).text == "backup 0"
    assert (await agent.generate("hi")).text == "primary"


async def test_without_a_breaker_every_run_pays_for_the_dead_model() -> None:
    first = primary([down(), down(), down()])
    agent = Agent("a", model=[first, backup(3)], max_retries=0)
    for _ in range(3):
        await agent.generate("hi")
    assert len(first.calls) == 3


# ---------------------------------------------------------------- on Redis


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def redis_breakers(redis_server: RedisServer) -> AsyncIterator[tuple[Any, Any]]:
    from sluicegate.models import RedisCircuitBreaker

    prefix = f"test:{uuid.uuid4().hex}:"
    made = [
        RedisCircuitBreaker(url=redis_server.url, prefix=prefix, failures=2, window=10, cooldown=0.3)
        for _ in range(2)
    ]
    yield made[0], made[1]
    for breaker in made:
        await breaker.close()


async def test_processes_sharing_redis_share_the_circuit(redis_breakers: tuple[Any, Any]) -> None:
    one, two = redis_breakers  # two processes' breakers
    await one.failed("m")
    assert await two.allows("m")
    await two.failed("m")
    assert not await one.allows("m") and not await two.allows("m")
    await asyncio.sleep(0.35)
    assert await one.allows("m")  # the probe, taken by one process only
    assert not await two.allows("m")
    await one.failed("m")
    assert not await two.allows("m")
    await asyncio.sleep(0.35)
    assert await two.allows("m")
    await two.succeeded("m")
    assert await one.allows("m") and await two.allows("m")


async def test_redis_shared_breaker_in_agents(redis_breakers: tuple[Any, Any]) -> None:
    one, two = redis_breakers
    first = primary([down(), down(), text_step("never")])
    agents = [
        Agent("a", model=[first, backup(3)], max_retries=0, circuit_breaker=breaker) for breaker in (one, two)
    ]
    for agent in (*agents, agents[1]):
        assert (await agent.generate("hi")).text.startswith("backup")
    assert len(first.calls) == 2  # the other process's run skipped it


async def test_an_unreachable_redis_tries_every_model_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    from sluicegate.models import RedisCircuitBreaker

    breaker = RedisCircuitBreaker(url=f"redis://127.0.0.1:{free_port()}/0", failures=1)
    first = primary([down(), text_step("primary")])
    agent = Agent("a", model=[first, backup(1)], max_retries=0, circuit_breaker=breaker)
    with caplog.at_level(logging.WARNING, logger="sluicegate.models"):
        assert (await agent.generate("hi")).text == "backup 0"
        assert (await agent.generate("hi")).text == "primary"
    warnings = [r.getMessage() for r in caplog.records if "circuit breaker: Redis" in r.getMessage()]
    assert len(warnings) == 1  # once per outage
    await breaker.close()
