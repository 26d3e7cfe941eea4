"""LanguageDetector through real Agent runs, the detector answering canned verdicts."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.processors import LanguageDetector
from sluicegate.testing import MockModel, text_step

from .conftest import Capture, detector, detector_prompt, detector_system, user_texts

SPANISH = "Hola, ¿cómo estás hoy?"
ENGLISH = "Hello, how are you today?"
ES = {"iso_code": "es", "confidence": 0.95}


async def run_input(processor: LanguageDetector, *messages: str) -> tuple[Any, MockModel, Capture]:
    main = MockModel([text_step("ok")])
    capture = Capture()
    agent = Agent(name="multilingual", model=main, input_processors=[processor, capture])
    return await agent.generate(list(messages)), main, capture


def detection(capture: Capture) -> Any:
    metadata = capture.messages[-1].content.metadata or {}
    return metadata.get("language_detection")


async def test_detect_records_the_language_and_keeps_the_text(violations: Any) -> None:
    processor = LanguageDetector(model=detector(ES))
    seen = violations(processor)
    result, main, capture = await run_input(processor, SPANISH)
    assert result.tripwire is None and user_texts(main.calls[0]) == [SPANISH]
    assert detection(capture) == {
        "detected_language": "Spanish", "iso_code": "es", "confidence": 0.95,
        "is_target_language": False, "target_languages": ["English", "en"],
    }  # fmt: skip
    assert seen == []


async def test_target_language_is_recorded_when_the_detector_answers_nothing() -> None:
    _, main, capture = await run_input(LanguageDetector(model=detector({})), ENGLISH)
    assert user_texts(main.calls[0]) == [ENGLISH]
    assert detection(capture)["iso_code"] == "en" and detection(capture)["is_target_language"] is True


async def test_translate_replaces_the_text_and_keeps_the_original() -> None:
    model = detector({**ES, "translated_text": ENGLISH})
    _, main, capture = await run_input(LanguageDetector(model=model, strategy="translate"), SPANISH)
    assert user_texts(main.calls[0]) == [ENGLISH]
    info = detection(capture)
    assert info["original_content"] == SPANISH
    assert info["translation"] == {
        "original_language": "Spanish",
        "target_language": "English",
        "translation_confidence": 0.95,
    }
    assert "translate to English" in detector_prompt(model.calls[0])
    assert "translated_text" in model.calls[0].response_format["schema"]["properties"]


async def test_preserve_original_false_leaves_the_original_out() -> None:
    model = detector({**ES, "translated_text": ENGLISH})
    _, _, capture = await run_input(
        LanguageDetector(model=model, strategy="translate", preserve_original=False), SPANISH
    )
    assert "original_content" not in detection(capture)


async def test_translate_without_a_translation_keeps_the_original() -> None:
    _, main, capture = await run_input(LanguageDetector(model=detector(ES), strategy="translate"), SPANISH)
    assert user_texts(main.calls[0]) == [SPANISH] and detection(capture)["iso_code"] == "es"


@pytest.mark.parametrize(
    ("quality", "hint"), [("speed", "quickly"), ("quality", "carefully"), ("balanced", "accurately")]
)
async def test_translation_quality_reaches_the_prompt(quality: Any, hint: str) -> None:
    model = detector({**ES, "translated_text": ENGLISH})
    await run_input(LanguageDetector(model=model, strategy="translate", translation_quality=quality), SPANISH)
    assert hint in detector_prompt(model.calls[0])


async def test_block_aborts_on_a_non_target_language(violations: Any) -> None:
    processor = LanguageDetector(model=detector(ES), strategy="block")
    seen = violations(processor)
    result, main, _ = await run_input(processor, SPANISH)
    assert main.calls == []
    assert result.tripwire.processor_id == "language-detector"
    assert (
        result.tripwire.reason
        == "Non-target language detected: Language detected: Spanish (es) with confidence 0.95"
    )
    assert result.tripwire.metadata["iso_code"] == "es" and len(seen) == 1


async def test_warn_passes_and_reports(violations: Any) -> None:
    processor = LanguageDetector(model=detector(ES), strategy="warn")
    seen = violations(processor)
    result, main, capture = await run_input(processor, SPANISH)
    assert result.tripwire is None and user_texts(main.calls[0]) == [SPANISH]
    assert len(seen) == 1 and seen[0].detail["detected_language"] == "Spanish"
    assert detection(capture)["iso_code"] == "es"


@pytest.mark.parametrize(("threshold", "blocked"), [(None, False), (0.6, True)])
async def test_threshold_default_is_0_7(threshold: float | None, blocked: bool) -> None:
    options = {} if threshold is None else {"threshold": threshold}
    processor = LanguageDetector(
        model=detector({"iso_code": "es", "confidence": 0.65}), strategy="block", **options
    )
    result, _, capture = await run_input(processor, SPANISH)
    assert (result.tripwire is not None) is blocked
    if not blocked:
        assert detection(capture) is None  # too unsure to record anything


async def test_target_languages_decide_what_is_foreign() -> None:
    model = detector(ES)
    processor = LanguageDetector(model=model, target_languages=["Spanish", "French"], strategy="block")
    result, _, capture = await run_input(processor, SPANISH)
    assert result.tripwire is None and detection(capture)["is_target_language"] is True
    assert detector_prompt(model.calls[0]).endswith("Target: Spanish/French")


@pytest.mark.parametrize(("min_length", "calls"), [(None, 0), (3, 1)])
async def test_min_text_length_skips_short_text(min_length: int | None, calls: int) -> None:
    model = detector(ES)
    options = {} if min_length is None else {"min_text_length": min_length}
    await run_input(LanguageDetector(model=model, **options), "Hola")
    assert len(model.calls) == calls


async def test_include_detection_details_logs_detections(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="sluicegate.processors.builtin.language_detector"):
        await run_input(LanguageDetector(model=detector(ES)), SPANISH)
        assert "Spanish" not in caplog.text
        await run_input(LanguageDetector(model=detector(ES), include_detection_details=True), SPANISH)
    assert "Language detected: Spanish (es) with confidence 0.95" in caplog.text


async def test_instructions_replace_the_default_system_prompt() -> None:
    model = detector({})
    await run_input(LanguageDetector(model=model, instructions="Name the dialect."), ENGLISH)
    assert detector_system(model.calls[0]) == "Name the dialect."


async def test_detector_failure_assumes_the_target_language() -> None:
    result, main, _ = await run_input(
        LanguageDetector(model=detector(RuntimeError("down")), strategy="block", error_strategy="allow"),
        SPANISH,
    )
    assert result.tripwire is None and user_texts(main.calls[0]) == [SPANISH]
