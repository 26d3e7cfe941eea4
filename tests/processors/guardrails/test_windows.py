"""Output-side LLM guardrails judge windows of the stream: a few detector calls, run while the
model keeps generating, with vetted or optimistic release; failures are loud."""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import APICallError, MissingAPIKeyError
from sluicegate.models.base import CallOptions, GenerateResult, StreamResult
from sluicegate.processors import ModerationProcessor, PIIDetector, Processor, SystemPromptScrubber
from sluicegate.testing import MockModel, text_step

from .conftest import CLEAN, deltas_step, detector_prompt, stream_text

HATE = {"category_scores": [{"category": "hate", "score": 0.9}], "reason": "hateful"}


class Judge(MockModel):
    """A detector answering `route(prompt)` after `delay` seconds, counting calls in flight."""

    def __init__(self, route: Callable[[str], dict[str, Any]], delay: float = 0.0) -> None:
        super().__init__()
        self.route = route
        self.delay = delay
        self.in_flight = 0
        self.most_in_flight = 0
        self.gate: asyncio.Event | None = None

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        self.calls.append(options)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        answer = json.dumps(self.route(detector_prompt(options)))
        return GenerateResult(content=[{"type": "text", "text": answer}], finish_reason="stop", usage={})


class SlowStream(MockModel):
    """A main model streaming `pieces` with `pause` seconds between them."""

    def __init__(self, pieces: list[str], pause: float) -> None:
        super().__init__([deltas_step(*pieces)])
        self.pause = pause

    async def do_stream(self, options: CallOptions) -> StreamResult:
        parts = self._next_parts(options)

        async def paced() -> AsyncIterator[Any]:
            for part in parts:
                if part["type"] == "text-delta":
                    await asyncio.sleep(self.pause)
                yield part

        return StreamResult(stream=paced())


def guardrail(kind: str, judge: MockModel, **options: Any) -> Any:
    if kind == "moderation":
        return ModerationProcessor(model=judge, **options)
    if kind == "pii":
        return PIIDetector(model=judge, **options)
    return SystemPromptScrubber(model=judge, **options)


KINDS = ["moderation", "pii", "scrubber"]


def stream_calls(judge: MockModel) -> int:
    return sum(
        1 for c in judge.calls if "Content:" in detector_prompt(c) and "final" not in detector_prompt(c)
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("chunks", [50, 500])
async def test_calls_per_stream_are_bounded_by_the_window(kind: str, chunks: int) -> None:
    judge = Judge(lambda _: CLEAN)
    pieces = [f"word{i % 10} " for i in range(chunks)]
    chars = sum(map(len, pieces))
    agent = Agent(
        name="w", model=MockModel([deltas_step(*pieces)]), output_processors=[guardrail(kind, judge)]
    )
    output = await agent.stream("hi")
    text, _ = await stream_text(output)
    assert text == "".join(pieces)
    # every call but the final whole-response check judged a stream window
    assert len(judge.calls) - 1 <= math.ceil(chars / 400) + 1


async def test_windows_are_judged_concurrently_while_the_model_generates() -> None:
    judge = Judge(lambda _: CLEAN, delay=0.02)
    pieces = ["x" * 50 + " "] * 40
    agent = Agent(
        name="w",
        model=MockModel([deltas_step(*pieces)]),
        output_processors=[ModerationProcessor(model=judge, window_chars=100, overlap_chars=10)],
    )
    text, _ = await stream_text(await agent.stream("hi"))
    assert text == "".join(pieces)
    assert judge.most_in_flight > 1


async def test_vetted_release_holds_text_until_a_verdict_covers_it() -> None:
    judge = Judge(lambda _: CLEAN)
    judge.gate = asyncio.Event()
    agent = Agent(
        name="w",
        model=MockModel([deltas_step("hello ", "world")]),
        output_processors=[ModerationProcessor(model=judge)],
    )
    output = await agent.stream("hi")
    seen: list[Any] = []

    async def consume() -> None:
        async for chunk in output.full_stream:
            seen.append(chunk)

    task = asyncio.create_task(consume())
    for _ in range(100):
        await asyncio.sleep(0.005)
        if judge.calls:
            break
    assert judge.calls and not any(c.type == "text-delta" for c in seen)
    judge.gate.set()
    await task
    assert "".join(c.payload.text for c in seen if c.type == "text-delta") == "hello world"


async def test_max_hold_ms_releases_a_slow_stream_before_it_ends() -> None:
    judge = Judge(lambda _: CLEAN)
    model = SlowStream(["one ", "two ", "three"], pause=0.08)
    agent = Agent(name="w", model=model, output_processors=[ModerationProcessor(model=judge, max_hold_ms=30)])
    output = await agent.stream("hi")
    arrivals: list[str] = []
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            arrivals.append(chunk.payload.text)
        if chunk.type == "text-end":
            break
    # text went out piecewise while the model was still streaming, not in one flush at the end
    assert len(arrivals) >= 2 and "".join(arrivals) == "one two three"


async def test_optimistic_release_retracts_and_aborts_on_a_late_violation() -> None:
    judge = Judge(lambda p: HATE if "BAD" in p else CLEAN)
    moderation = ModerationProcessor(model=judge, release="optimistic")
    agent = Agent(name="w", model=MockModel([deltas_step("fine ", "BAD")]), output_processors=[moderation])
    text, chunks = await stream_text(await agent.stream("hi"))
    assert text == "fine BAD"  # released at once
    types = [c.type for c in chunks]
    assert "data-guardrail-retraction" in types and types[-1] == "tripwire"
    assert types.index("data-guardrail-retraction") < types.index("tripwire")
    retraction = chunks[types.index("data-guardrail-retraction")]
    assert retraction.data["processorId"] == "moderation" and retraction.data["end"] == len(text)


async def test_warn_defaults_to_optimistic_and_block_to_vetted() -> None:
    assert ModerationProcessor(model=MockModel(), strategy="warn").release == "optimistic"
    assert ModerationProcessor(model=MockModel()).release == "vetted"
    assert PIIDetector(model=MockModel()).release == "vetted"
    with pytest.raises(ValueError, match="release"):
        ModerationProcessor(model=MockModel(), release="eventually")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="overlap_chars"):
        ModerationProcessor(model=MockModel(), window_chars=10, overlap_chars=10)


async def test_a_value_split_across_chunks_is_redacted_whole() -> None:
    email = "john.doe@example.com"

    def route(prompt: str) -> dict[str, Any]:
        return (
            {"detections": [{"type": "email", "value": email, "confidence": 0.9}]} if email in prompt else {}
        )

    pii = PIIDetector(model=Judge(route), redaction_method="placeholder")
    agent = Agent(
        name="w",
        model=MockModel([deltas_step("mail john.d", "oe@exam", "ple.com now")]),
        output_processors=[pii],
    )
    text, _ = await stream_text(await agent.stream("hi"))
    assert text == "mail [EMAIL] now"


# ---------------------------------------------------------------------- failures


@pytest.mark.parametrize("kind", KINDS)
async def test_a_missing_api_key_is_an_error_not_a_pass(kind: str) -> None:
    judge = MockModel([MissingAPIKeyError("OPENAI_API_KEY is not set")] * 5)
    agent = Agent(
        name="w",
        model=MockModel([text_step("secret stuff")]),
        output_processors=[guardrail(kind, judge, error_strategy="allow")],
    )
    with pytest.raises(Exception, match="OPENAI_API_KEY"):
        await agent.generate("hi")


@pytest.mark.parametrize("status", [401, 404])
async def test_an_unknown_model_or_a_rejected_key_is_an_error_not_a_pass(status: int) -> None:
    judge = MockModel([APICallError("no such model", status_code=status)] * 5)
    guard = ModerationProcessor(model=judge, error_strategy="allow")
    agent = Agent(name="w", model=MockModel([text_step("hello")]), input_processors=[guard])
    with pytest.raises(Exception, match="rejected the call"):
        await agent.generate("hi")


@pytest.mark.parametrize("kind", KINDS)
async def test_a_failed_stream_judgement_fails_closed_by_default(kind: str) -> None:
    judge = MockModel([RuntimeError("down")] * 5)
    options = {"strategy": "block"} if kind != "moderation" else {}
    agent = Agent(
        name="w",
        model=MockModel([text_step("secret stuff")]),
        output_processors=[guardrail(kind, judge, **options)],
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    assert text == "" and chunks[-1].type == "tripwire"
    assert chunks[-1].payload.metadata["detector_failed"] is True


async def test_fail_open_is_logged_at_warning_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    moderation = ModerationProcessor(model=MockModel([RuntimeError("down")] * 5), error_strategy="allow")
    seen: list[Any] = []
    moderation.on_violation = seen.append
    agent = Agent(name="w", model=MockModel([text_step("hello")]), output_processors=[moderation])
    with caplog.at_level(logging.WARNING):
        text, _ = await stream_text(await agent.stream("hi"))
    assert text == "hello"
    assert any(r.levelno == logging.WARNING and "down" in r.getMessage() for r in caplog.records)
    assert seen and all(v.detail["fail_open"] for v in seen)


async def test_pii_without_a_model_works_offline_with_the_pattern_pass() -> None:
    pii = PIIDetector(redaction_method="placeholder")
    assert pii.llm == "never" and pii.detector is None
    agent = Agent(
        name="w", model=MockModel([deltas_step("card 4111 1111 ", "1111 1111 ok")]), output_processors=[pii]
    )
    text, _ = await stream_text(await agent.stream("hi"))
    assert text == "card [CREDIT-CARD] ok"
    with pytest.raises(ValueError, match="needs a `model`"):
        PIIDetector(llm="always")  # type: ignore[arg-type]


async def test_pii_when_unsure_asks_the_model_only_when_the_patterns_found_nothing() -> None:
    judge = Judge(lambda _: {})
    pii = PIIDetector(model=judge, llm="when-unsure", redaction_method="placeholder")
    agent = Agent(name="w", model=MockModel([text_step("mail a@b.co")]), output_processors=[pii])
    text, _ = await stream_text(await agent.stream("hi"))
    assert text == "mail [EMAIL]"
    assert not any("a@b.co" in detector_prompt(c) for c in judge.calls)
    agent = Agent(name="w", model=MockModel([text_step("my name is Ann")]), output_processors=[pii])
    await stream_text(await agent.stream("hi"))
    assert judge.calls


async def test_the_whole_response_check_starts_when_the_streamed_text_ends() -> None:
    judge = Judge(lambda _: CLEAN)
    seen: list[int] = []

    class Probe(Processor):
        id = "probe"

        async def process_output_result(self, args: Any) -> None:
            await asyncio.sleep(0)  # one turn of the loop: a task already started has run
            seen.append(len(judge.calls))

    agent = Agent(
        name="w",
        model=MockModel([text_step("hello there")]),
        output_processors=[Probe(), PIIDetector(model=judge)],
    )
    result = await agent.generate("hi")
    assert result.text == "hello there"
    # one window call, and the final check already asked before any output-result hook ran
    assert seen == [2] and len(judge.calls) == 2


def test_value_start_finds_where_a_growing_value_begins_within_its_bound() -> None:
    from sluicegate.guardrails.lanes import value_start

    text = "some words then sk-" + "x" * 300
    assert value_start(text, len(text), 8192) == text.index("sk-")
    assert value_start("ends in a space ", 16, 8192) == 16
    assert value_start("nospace" * 50, 350, 8192) == 0
    assert value_start(text, len(text), 100) == len(text) - 101  # longer than the bound
