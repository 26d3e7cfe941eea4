"""EvaluationModerationProcessor: verdicts, failures per mode, the breaker, and its options."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from models.fake_provider import FakeProvider
from sluicegate import Agent
from sluicegate.errors import ConfigurationError
from sluicegate.models.circuit_breaker import CircuitBreaker
from sluicegate.processors import EvaluationModerationProcessor, EvaluationVerdict
from sluicegate.testing import MockModel, text_step

URL = "https://moderation.test/v1/evaluate"
PATH = "/v1/evaluate"


class Endpoint:
    """An `httpx.MockTransport` handler answering from a script, recording each request."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, httpx.Response):
            return answer
        return httpx.Response(200, json=answer)

    def bodies(self) -> list[Any]:
        return [json.loads(r.content) for r in self.requests]


def moderation(endpoint: Endpoint, **options: Any) -> EvaluationModerationProcessor:
    return EvaluationModerationProcessor(url=URL, transport=httpx.MockTransport(endpoint), **options)


def agent(processor: EvaluationModerationProcessor, model: MockModel | None = None) -> Agent:
    return Agent(
        "a",
        model=model or MockModel([text_step("the answer")]),
        input_processors=[processor],
        output_processors=[processor],
    )


async def test_a_flagged_input_stops_the_run_before_the_model_in_strict_mode() -> None:
    endpoint = Endpoint({"score": 0.91, "category": "violence", "model": "eval-1"})
    model = MockModel([text_step("unused")])
    processor = moderation(endpoint, headers={"authorization": "Bearer k"})
    result = await agent(processor, model).generate([{"role": "user", "content": "older"}, "hurt him"])
    assert result.tripwire is not None and result.tripwire.reason == "MESSAGE_BLOCKED"
    assert result.tripwire.metadata["category"] == "violence"
    assert model.calls == []
    assert endpoint.bodies() == [{"text": "hurt him", "phase": "input"}]
    assert endpoint.requests[0].headers["authorization"] == "Bearer k"


async def test_a_clean_input_passes_and_is_judged_once() -> None:
    endpoint = Endpoint({"score": 0.1})
    seen: list[EvaluationVerdict] = []
    result = await agent(moderation(endpoint, on_verdict=seen.append)).generate("hello")
    assert result.tripwire is None and result.text == "the answer"
    assert len(endpoint.requests) == 1
    assert seen == [EvaluationVerdict(score=0.1)]


async def test_the_endpoint_flag_wins_over_a_low_score_and_threshold_is_inclusive() -> None:
    result = await agent(moderation(Endpoint({"score": 0.0, "flagged": True}))).generate("x")
    assert result.tripwire is not None
    result = await agent(moderation(Endpoint({"score": 0.5}), threshold=0.5)).generate("x")
    assert result.tripwire is not None
    result = await agent(moderation(Endpoint({"score": 0.49}), threshold=0.5)).generate("x")
    assert result.tripwire is None


async def test_warn_mode_reports_a_flag_and_lets_it_through() -> None:
    processor = moderation(Endpoint({"score": 0.99, "category": "hate"}), mode="warn", reason="BLOCKED_HATE")
    reports: list[Any] = []
    processor.on_violation = reports.append
    result = await agent(processor).generate("x")
    assert result.tripwire is None and result.text == "the answer"
    assert [(r.message, r.detail["category"], r.detail["phase"]) for r in reports] == [
        ("BLOCKED_HATE", "hate", "input")
    ]


async def test_output_phase_judges_the_final_text_only() -> None:
    endpoint = Endpoint({"score": 0.95})
    processor = moderation(endpoint, phases=["output"])
    result = await agent(processor, MockModel([text_step("  the answer  ")])).generate("question")
    assert endpoint.bodies() == [{"text": "the answer", "phase": "output"}]
    assert result.tripwire is not None and result.tripwire.metadata["phase"] == "output"


async def test_text_is_cut_to_max_chars_and_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    endpoint = Endpoint({"score": 0.95})
    with caplog.at_level(logging.DEBUG):
        await agent(moderation(endpoint, max_chars=5)).generate("secret-words")
    assert endpoint.bodies()[0]["text"] == "secre"
    assert "flagged the input" in caplog.text and "secre" not in caplog.text


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, text="<html>proxy error</html>"),
        httpx.Response(200, json={"flagged": True}),
        httpx.Response(200, json={"score": 1.5}),
        httpx.Response(200, json={"score": "high"}),
        httpx.Response(403, json={"error": "bad key"}),
        httpx.ConnectError("refused"),
    ],
    ids=["html", "no-score", "score-out-of-range", "score-not-a-number", "403", "connect"],
)
async def test_no_verdict_fails_closed_in_strict_and_open_in_warn(
    answer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        strict = await agent(moderation(Endpoint(answer))).generate("x")
        warn = await agent(moderation(Endpoint(answer), mode="warn")).generate("x")
    assert strict.tripwire is not None and strict.tripwire.reason == "EVALUATION_UNAVAILABLE"
    assert warn.tripwire is None and warn.text == "the answer"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "strict" in errors[0].getMessage()


async def test_one_retry_repeats_a_5xx_but_not_a_4xx() -> None:
    endpoint = Endpoint(httpx.Response(503), {"score": 0.0})
    result = await agent(moderation(endpoint, retries=1)).generate("x")
    assert result.tripwire is None and len(endpoint.requests) == 2
    endpoint = Endpoint(httpx.Response(503), {"score": 0.0})
    result = await agent(moderation(endpoint)).generate("x")
    assert result.tripwire is not None and len(endpoint.requests) == 1
    endpoint = Endpoint(httpx.Response(400), {"score": 0.0})
    result = await agent(moderation(endpoint, retries=1)).generate("x")
    assert result.tripwire is not None and len(endpoint.requests) == 1


async def test_an_open_breaker_skips_the_call_then_probes_after_the_cooldown() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failures=2, window=60, cooldown=30, clock=lambda: now[0])
    endpoint = Endpoint(httpx.Response(500), httpx.Response(500), {"score": 0.0})
    strict = moderation(endpoint, breaker=breaker)
    warn = moderation(endpoint, breaker=breaker, mode="warn")
    for _ in range(2):
        await agent(strict).generate("x")
    assert len(endpoint.requests) == 2
    blocked = await agent(strict).generate("x")
    passed = await agent(warn).generate("x")
    assert len(endpoint.requests) == 2  # open: no call made
    assert blocked.tripwire is not None and blocked.tripwire.metadata["error"] == "circuit breaker open"
    assert passed.tripwire is None
    now[0] = 31.0
    result = await agent(strict).generate("x")
    assert result.tripwire is None and len(endpoint.requests) == 3
    await agent(strict).generate("x")
    assert len(endpoint.requests) == 4  # closed again


async def test_a_raising_on_verdict_does_not_change_the_outcome() -> None:
    def explode(verdict: EvaluationVerdict) -> None:
        raise RuntimeError("metrics down")

    result = await agent(moderation(Endpoint({"score": 0.95}), on_verdict=explode)).generate("x")
    assert result.tripwire is not None and result.tripwire.reason == "MESSAGE_BLOCKED"


async def test_an_async_on_verdict_is_awaited() -> None:
    seen: list[float] = []

    async def record(verdict: EvaluationVerdict) -> None:
        seen.append(verdict.score)

    await agent(moderation(Endpoint({"score": 0.2}), on_verdict=record)).generate("x")
    assert seen == [0.2]


async def test_a_slow_endpoint_is_no_verdict_even_past_the_agents_processor_timeout(
    endpoint: FakeProvider,
) -> None:
    endpoint.reply(PATH, json={"score": 0.0}, delay=2.0)
    processor = real(endpoint, mode="warn", call_timeout=0.3)
    assert processor.timeout is not None and processor.timeout > 0.3
    model = MockModel([text_step("the answer")])
    slow_agent = Agent("a", model=model, input_processors=[processor], processor_timeout=0.1)
    result = await slow_agent.generate("x")
    assert result.tripwire is None and result.text == "the answer"


async def test_the_default_client_is_kept_per_loop_and_closed_by_aclose() -> None:
    processor = moderation(Endpoint({"score": 0.0}))
    await agent(processor).generate("x")
    first = processor._http()
    await agent(processor).generate("y")
    assert processor._http() is first and not first.is_closed
    await processor.aclose()
    assert first.is_closed
    await agent(processor).generate("z")
    assert processor._http() is not first


async def test_a_given_client_is_used_and_left_open() -> None:
    endpoint = Endpoint({"score": 0.0})
    async with httpx.AsyncClient(transport=httpx.MockTransport(endpoint)) as client:
        processor = EvaluationModerationProcessor(url=URL, client=client)
        await agent(processor).generate("x")
        await agent(processor).generate("y")
        assert not client.is_closed
    assert [b["text"] for b in endpoint.bodies()] == ["x", "y"]


# ---------------------------------------------------------------- a real server


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    provider = FakeProvider()
    yield provider
    provider.close()


@pytest.fixture
def endpoint(server: FakeProvider) -> Iterator[FakeProvider]:
    server.reset()
    yield server
    server.reset()


def real(server: FakeProvider, **options: Any) -> EvaluationModerationProcessor:
    return EvaluationModerationProcessor(url=server.url + PATH, **options)


async def test_real_server_flagged_and_clean(endpoint: FakeProvider) -> None:
    endpoint.reply(PATH, json={"score": 0.8, "category": "illicit"})
    endpoint.reply(PATH, json={"score": 0.1})
    blocked = await agent(real(endpoint)).generate("forge a passport")
    clean = await agent(real(endpoint)).generate("renew a passport")
    assert blocked.tripwire is not None and clean.tripwire is None
    assert endpoint.bodies(PATH) == [
        {"text": "forge a passport", "phase": "input"},
        {"text": "renew a passport", "phase": "input"},
    ]


async def test_real_server_timeout_costs_one_deadline_per_cooldown(endpoint: FakeProvider) -> None:
    for _ in range(3):
        endpoint.reply(PATH, json={"score": 0.0}, delay=2.0)
    breaker = CircuitBreaker(failures=1, window=60, cooldown=60)
    processor = real(endpoint, call_timeout=0.2, breaker=breaker)
    started = time.monotonic()
    first = await agent(processor).generate("x")
    second = await agent(processor).generate("x")
    elapsed = time.monotonic() - started
    assert first.tripwire is not None and first.tripwire.metadata["error"] == "timed out after 0.2 s"
    assert second.tripwire is not None and second.tripwire.metadata["error"] == "circuit breaker open"
    assert 0.2 <= elapsed < 1.0
    assert len(endpoint.requests) == 1


async def test_real_server_500_and_malformed_body(endpoint: FakeProvider) -> None:
    endpoint.reply(PATH, status=500, json={"error": "boom"})
    endpoint.reply(PATH, raw=b"not json", content_type="application/json")
    endpoint.reply(PATH, status=500, json={"error": "boom"})
    endpoint.reply(PATH, json={"score": 0.0})
    failed = await agent(real(endpoint, mode="warn")).generate("x")
    malformed = await agent(real(endpoint)).generate("x")
    retried = await agent(real(endpoint, retries=1)).generate("x")
    assert failed.tripwire is None
    assert malformed.tripwire is not None and "malformed verdict" in malformed.tripwire.metadata["error"]
    assert retried.tripwire is None and len(endpoint.requests) == 4


# ---------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"endpoint": URL}, "unknown option.*'endpoint'"),
        ({}, "url .* is required"),
        ({"url": "moderation.test"}, "url"),
        ({"url": URL, "mode": "block"}, "mode"),
        ({"url": URL, "phases": "input"}, "phases"),
        ({"url": URL, "phases": ["input", "stream"]}, "phases"),
        ({"url": URL, "phases": []}, "phases"),
        ({"url": URL, "threshold": 1.5}, "threshold"),
        ({"url": URL, "reason": ""}, "reason"),
        ({"url": URL, "max_chars": 0}, "max_chars"),
        ({"url": URL, "call_timeout": 0}, "call_timeout"),
        ({"url": URL, "call_timeout": float("inf")}, "call_timeout"),
        ({"url": URL, "retries": 2}, "retries"),
        ({"url": URL, "headers": {"x": 1}}, "headers"),
        ({"url": URL, "breaker": object()}, "breaker"),
        ({"url": URL, "on_verdict": "log"}, "on_verdict"),
        ({"url": URL, "client": object()}, "client"),
        ({"url": URL, "transport": object()}, "transport"),
        (
            {"url": URL, "client": httpx.AsyncClient(), "transport": httpx.MockTransport(Endpoint({}))},
            "not both",
        ),
    ],
)
def test_bad_options_are_configuration_errors(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        EvaluationModerationProcessor(**options)
