"""ModerationProcessor through real Agent runs, the detector answering canned verdicts."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.processors import ModerationProcessor
from sluicegate.processors.builtin.moderation import DEFAULT_CATEGORIES
from sluicegate.testing import MockModel, text_step

from .conftest import (
    CLEAN,
    deltas_step,
    detector,
    detector_prompt,
    detector_system,
    routed_detector,
    stream_text,
    user_texts,
)

HATE = {"category_scores": [{"category": "hate", "score": 0.9}], "reason": "slur"}


def hate(score: float) -> dict[str, Any]:
    return {"category_scores": [{"category": "hate", "score": score}], "reason": "slur"}


async def run_input(processor: ModerationProcessor, *messages: str) -> tuple[Any, MockModel]:
    main = MockModel([text_step("ok")])
    agent = Agent(name="moderated", model=main, input_processors=[processor])
    return await agent.generate(list(messages)), main


async def test_block_aborts_before_the_model_with_metadata_and_violation(violations: Any) -> None:
    moderation = ModerationProcessor(model=detector(HATE))
    seen = violations(moderation)
    result, main = await run_input(moderation, "you people are awful")
    assert main.calls == []
    assert result.finish_reason == "other"
    assert result.tripwire.processor_id == "moderation"
    assert result.tripwire.reason == "Content flagged for moderation. Categories: hate. Reason: slur"
    assert result.tripwire.metadata == {"categories": ["hate"], "reason": "slur"}
    assert [(v.processor_id, v.detail) for v in seen] == [("moderation", result.tripwire.metadata)]


async def test_clean_input_reaches_the_model_unchanged(violations: Any) -> None:
    moderation = ModerationProcessor(model=detector({"category_scores": [], "reason": None}))
    seen = violations(moderation)
    result, main = await run_input(moderation, "hello there")
    assert result.tripwire is None and result.text == "ok"
    assert user_texts(main.calls[0]) == ["hello there"]
    assert seen == []


@pytest.mark.parametrize(("threshold", "blocked"), [(0.5, True), (0.7, True), (0.71, False), (0.95, False)])
async def test_threshold_is_inclusive(threshold: float, blocked: bool) -> None:
    moderation = ModerationProcessor(model=detector(hate(0.7)), threshold=threshold)
    result, main = await run_input(moderation, "borderline text")
    assert (result.tripwire is not None) is blocked
    assert (main.calls == []) is blocked


async def test_default_threshold_is_one_half() -> None:
    below, _ = await run_input(ModerationProcessor(model=detector(hate(0.49))), "text")
    at, _ = await run_input(ModerationProcessor(model=detector(hate(0.5))), "text")
    assert below.tripwire is None and at.tripwire is not None


async def test_warn_lets_content_through_and_reports(
    violations: Any, caplog: pytest.LogCaptureFixture
) -> None:
    moderation = ModerationProcessor(model=detector(HATE), strategy="warn")
    seen = violations(moderation)
    with caplog.at_level(logging.WARNING):
        result, main = await run_input(moderation, "you people are awful")
    assert result.tripwire is None
    assert user_texts(main.calls[0]) == ["you people are awful"]
    assert len(seen) == 1 and seen[0].detail == {"categories": ["hate"], "reason": "slur"}
    assert "Content flagged for moderation" in caplog.text


async def test_warn_survives_a_failing_violation_callback() -> None:
    moderation = ModerationProcessor(model=detector(HATE), strategy="warn")

    def explode(_: Any) -> None:
        raise RuntimeError("alerting is down")

    moderation.on_violation = explode
    result, main = await run_input(moderation, "you people are awful")
    assert result.tripwire is None and len(main.calls) == 1


async def test_filter_drops_only_the_flagged_message() -> None:
    moderation = ModerationProcessor(model=detector(HATE, CLEAN), strategy="filter")
    result, main = await run_input(moderation, "you people are awful", "what is the weather?")
    assert result.tripwire is None
    assert user_texts(main.calls[0]) == ["what is the weather?"]


async def test_categories_reach_the_detector_and_limit_what_counts() -> None:
    model = detector(hate(0.99))
    moderation = ModerationProcessor(model=model, categories=["spam", "scam"])
    result, main = await run_input(moderation, "buy now")
    system = detector_system(model.calls[0])
    assert "- spam\n- scam" in system and "hate" not in system
    schema = model.calls[0].response_format["schema"]
    assert schema["$defs"]["CategoryScore"]["properties"]["category"]["enum"] == ["spam", "scam"]
    # "hate" is not a configured category, so its score does not flag the content
    assert result.tripwire is None and len(main.calls) == 1


async def test_default_categories_are_openais() -> None:
    model = detector(CLEAN)
    await run_input(ModerationProcessor(model=model), "hello")
    system = detector_system(model.calls[0])
    assert all(f"- {category}\n" in system + "\n" for category in DEFAULT_CATEGORIES)


async def test_instructions_replace_the_default_system_prompt() -> None:
    model = detector(CLEAN)
    await run_input(ModerationProcessor(model=model, instructions="Flag anything about cats."), "hello")
    assert detector_system(model.calls[0]) == "Flag anything about cats."
    assert detector_prompt(model.calls[0]).endswith('Content: "hello"')


async def test_include_scores_adds_every_score_to_the_report() -> None:
    answer = {"category_scores": [{"category": "hate", "score": 0.9}, {"category": "violence", "score": 0.2}]}
    with_scores, _ = await run_input(ModerationProcessor(model=detector(answer), include_scores=True), "x")
    without, _ = await run_input(ModerationProcessor(model=detector(answer)), "x")
    assert with_scores.tripwire.reason.endswith("Scores: hate: 0.9, violence: 0.2")
    assert with_scores.tripwire.metadata["scores"] == {"hate": 0.9, "violence": 0.2}
    assert "Scores" not in without.tripwire.reason and "scores" not in without.tripwire.metadata


async def test_detector_failure_fails_open_when_allowed_logged_and_reported(
    caplog: pytest.LogCaptureFixture, violations: Any
) -> None:
    moderation = ModerationProcessor(model=detector(RuntimeError("rate limited")), error_strategy="allow")
    seen = violations(moderation)
    with caplog.at_level(logging.WARNING):
        result, main = await run_input(moderation, "anything")
    assert result.tripwire is None and user_texts(main.calls[0]) == ["anything"]
    assert "rate limited" in caplog.text
    assert seen and seen[0].detail["fail_open"] is True and "rate limited" in seen[0].detail["error"]


async def test_detector_failure_blocks_by_default() -> None:
    result, main = await run_input(
        ModerationProcessor(model=detector(RuntimeError("rate limited"))), "anything"
    )
    assert result.tripwire is not None and main.calls == []
    assert result.tripwire.metadata["detector_failed"] is True


async def test_out_of_range_scores_are_an_invalid_verdict() -> None:
    result, main = await run_input(ModerationProcessor(model=detector(hate(7))), "anything")
    assert result.tripwire is not None and main.calls == []
    allowed = ModerationProcessor(model=detector(hate(7)), error_strategy="allow")
    result, main = await run_input(allowed, "anything")
    assert result.tripwire is None and len(main.calls) == 1


# ---------------------------------------------------------------------- output


def stream_route(flag_when: str) -> Any:
    """Flag streamed windows containing `flag_when`; pass everything else."""
    return lambda prompt: HATE if flag_when in prompt else CLEAN


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, ["abcdef"]),  # one window: far below window_chars
        ({"chunk_window": 1}, ["abcd", "abcdef"]),  # a window closes after 2 chunks
        # "abcd" is a value still growing at the first window's end: judged again whole, with
        # what follows (not only the overlap "d")
        ({"window_chars": 3, "overlap_chars": 1}, ["abcd", "abcdef"]),
    ],
)
async def test_stream_is_judged_in_windows(options: dict[str, Any], expected: list[str]) -> None:
    model = routed_detector(lambda _: CLEAN)
    moderation = ModerationProcessor(model=model, **options)
    agent = Agent(name="m", model=MockModel([deltas_step("ab", "cd", "ef")]), output_processors=[moderation])
    text, _ = await stream_text(await agent.stream("hi"))
    assert text == "abcdef"
    stream_prompts = [detector_prompt(c) for c in model.calls if "part of a stream" in detector_prompt(c)]
    assert [p.rsplit('Content: "', 1)[1][:-1] for p in stream_prompts] == expected


async def test_stream_filter_drops_flagged_deltas() -> None:
    moderation = ModerationProcessor(
        model=routed_detector(stream_route("BAD")), strategy="filter", window_chars=5, overlap_chars=0
    )
    agent = Agent(
        name="m", model=MockModel([deltas_step("fine ", "BAD ", "fine")]), output_processors=[moderation]
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    assert text == "fine "  # the window holding "BAD" is withheld
    assert chunks[-1].type == "finish"


async def test_stream_block_ends_the_stream_with_a_tripwire(violations: Any) -> None:
    moderation = ModerationProcessor(model=routed_detector(stream_route("BAD")))
    seen = violations(moderation)
    agent = Agent(
        name="m", model=MockModel([deltas_step("fine ", "BAD ", "fine")]), output_processors=[moderation]
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    assert chunks[-1].type == "tripwire"
    assert chunks[-1].payload.metadata == {"categories": ["hate"], "reason": "slur"}
    assert "BAD" not in text
    assert len(seen) == 1


async def test_stream_warn_passes_deltas_and_reports(violations: Any) -> None:
    moderation = ModerationProcessor(model=routed_detector(stream_route("BAD")), strategy="warn")
    seen = violations(moderation)
    agent = Agent(name="m", model=MockModel([deltas_step("fine ", "BAD")]), output_processors=[moderation])
    text, _ = await stream_text(await agent.stream("hi"))
    assert text == "fine BAD"
    assert len(seen) == 2  # the flagged delta, then the final response


async def test_stream_detector_failure_passes_the_delta() -> None:
    moderation = ModerationProcessor(model=MockModel([RuntimeError("down")] * 5), error_strategy="allow")
    agent = Agent(name="m", model=MockModel([text_step("hello")]), output_processors=[moderation])
    result = await agent.generate("hi")
    assert result.tripwire is None and result.text == "hello"


async def test_output_result_filter_drops_the_flagged_response_message() -> None:
    # the stream's single delta passes; the final check of the whole response flags it
    moderation = ModerationProcessor(
        model=routed_detector(lambda p: CLEAN if "part of a stream" in p else HATE), strategy="filter"
    )
    agent = Agent(name="m", model=MockModel([text_step("hello")]), output_processors=[moderation])
    result = await agent.generate("hi")
    assert result.tripwire is None
    assert result.response.messages == []


async def test_output_result_checks_only_the_response_not_the_input() -> None:
    model = routed_detector(lambda _: CLEAN)
    moderation = ModerationProcessor(model=model)
    agent = Agent(name="m", model=MockModel([text_step("the answer")]), output_processors=[moderation])
    await agent.generate("the question")
    prompts = [detector_prompt(c) for c in model.calls]
    assert not any("the question" in p for p in prompts)
    assert prompts[-1].endswith('Content: "the answer"')


async def test_batching_before_moderation_means_one_detector_call_per_batch() -> None:
    from sluicegate.processors import BatchPartsProcessor

    model = routed_detector(lambda _: CLEAN)
    moderation = ModerationProcessor(model=model)
    agent = Agent(
        name="m",
        model=MockModel([deltas_step("a", "b", "c", "d", "e", "f")]),
        output_processors=[BatchPartsProcessor(batch_size=3), moderation],
    )
    text, _ = await stream_text(await agent.stream("hi"))
    assert text == "abcdef"
    stream_prompts = [detector_prompt(c) for c in model.calls if "part of a stream" in detector_prompt(c)]
    assert [p.rsplit('Content: "', 1)[1][:-1] for p in stream_prompts] == ["abcdef"]
