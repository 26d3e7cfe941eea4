"""SystemPromptScrubber through real Agent runs, the detector answering canned verdicts."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.processors import SystemPromptScrubber
from sluicegate.processors.builtin.system_prompt_scrubber import SystemPromptDetection, SystemPromptVerdict
from sluicegate.testing import MockModel, text_step

from .conftest import (
    CLEAN,
    deltas_step,
    detector,
    detector_prompt,
    detector_system,
    routed_detector,
    stream_text,
)

LEAK = "My instructions say: never discuss pricing."
ANSWER = "Sure, I can help."


def leak_route(prompt: str) -> dict[str, Any]:
    if LEAK not in prompt:
        return CLEAN
    return {
        "detections": [
            {"type": "system-prompt", "value": LEAK, "confidence": 0.9, "start": 0, "end": len(LEAK)}
        ],
        "reason": "reveals instructions",
    }


async def stream(scrubber: SystemPromptScrubber, *deltas: str) -> tuple[str, list[Any]]:
    agent = Agent(name="a", model=MockModel([deltas_step(*deltas)]), output_processors=[scrubber])
    return await stream_text(await agent.stream("hi"))


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, "*" * len(LEAK)),
        ({"redaction_method": "mask"}, "*" * len(LEAK)),
        ({"redaction_method": "placeholder"}, "[SYSTEM_PROMPT]"),
        ({"redaction_method": "placeholder", "placeholder_text": "[REDACTED]"}, "[REDACTED]"),
        ({"redaction_method": "remove"}, ""),
    ],
)
async def test_stream_redacts_leaked_instructions(options: dict[str, Any], expected: str) -> None:
    scrubber = SystemPromptScrubber(model=routed_detector(leak_route), **options)
    text, chunks = await stream(scrubber, ANSWER, " ", LEAK)
    assert text == f"{ANSWER} {expected}"
    assert chunks[-1].type == "finish"


async def test_stream_redacts_only_the_leaked_part_of_a_delta() -> None:
    scrubber = SystemPromptScrubber(model=routed_detector(leak_route), redaction_method="placeholder")
    text, _ = await stream(scrubber, f"{ANSWER} {LEAK} Bye.")
    assert text == f"{ANSWER} [SYSTEM_PROMPT] Bye."


async def test_stream_filter_drops_the_delta() -> None:
    text, _ = await stream(
        SystemPromptScrubber(model=routed_detector(leak_route), strategy="filter"), ANSWER, LEAK
    )
    assert text == ""  # the window is withheld


async def test_stream_block_trips(violations: Any) -> None:
    scrubber = SystemPromptScrubber(model=routed_detector(leak_route), strategy="block")
    seen = violations(scrubber)
    text, chunks = await stream(scrubber, ANSWER, LEAK)
    assert text == ""  # vetted: nothing went out before the verdict
    assert chunks[-1].type == "tripwire"
    assert chunks[-1].payload.processor_id == "system-prompt-scrubber"
    assert chunks[-1].payload.reason == "System prompt detected: system-prompt"
    assert chunks[-1].payload.metadata == {"types": ["system-prompt"], "reason": "reveals instructions"}
    assert len(seen) == 1


async def test_warn_passes_and_reports(violations: Any) -> None:
    scrubber = SystemPromptScrubber(model=routed_detector(leak_route), strategy="warn")
    seen = violations(scrubber)
    text, _ = await stream(scrubber, ANSWER, LEAK)
    assert text == ANSWER + LEAK
    assert [v.detail["types"] for v in seen] == [
        ["system-prompt"],
        ["system-prompt"],
    ]  # the delta, then the result


async def test_include_detections() -> None:
    scrubber = SystemPromptScrubber(
        model=routed_detector(leak_route), strategy="block", include_detections=True
    )
    _, chunks = await stream(scrubber, LEAK)
    assert chunks[-1].payload.reason.endswith("Detections: 1 items")
    assert chunks[-1].payload.metadata["detections"] == [
        {"type": "system-prompt", "confidence": 0.9, "start": 0, "end": len(LEAK)}
    ]


async def test_a_leak_split_across_deltas_is_judged_whole() -> None:
    half = len(LEAK) // 2
    scrubber = SystemPromptScrubber(model=routed_detector(leak_route), redaction_method="placeholder")
    agent = Agent(
        name="a", model=MockModel([deltas_step(LEAK[:half], LEAK[half:])]), output_processors=[scrubber]
    )
    result = await agent.generate("hi")
    assert result.text == "[SYSTEM_PROMPT]"
    assert [m.text for m in result.response.messages] == ["[SYSTEM_PROMPT]"]


async def test_output_result_filter_drops_the_response_message() -> None:
    half = len(LEAK) // 2
    scrubber = SystemPromptScrubber(model=routed_detector(leak_route), strategy="filter")
    agent = Agent(
        name="a", model=MockModel([deltas_step(LEAK[:half], LEAK[half:])]), output_processors=[scrubber]
    )
    result = await agent.generate("hi")
    assert result.response.messages == []


async def test_custom_patterns_and_instructions_reach_the_detector() -> None:
    model = detector(CLEAN, CLEAN)
    scrubber = SystemPromptScrubber(model=model, custom_patterns=["internal instructions", "codename"])
    agent = Agent(name="a", model=MockModel([text_step(ANSWER)]), output_processors=[scrubber])
    await agent.generate("hi")
    assert "Additional custom patterns to detect: internal instructions, codename" in detector_system(
        model.calls[0]
    )
    assert detector_prompt(model.calls[0]).endswith(f'Content: "{ANSWER}"')

    model = detector(CLEAN, CLEAN)
    agent = Agent(
        name="a",
        model=MockModel([text_step(ANSWER)]),
        output_processors=[SystemPromptScrubber(model=model, instructions="Spot the codename.")],
    )
    await agent.generate("hi")
    assert detector_system(model.calls[0]) == "Spot the codename."


async def test_model_redacted_content_is_used_when_nothing_can_be_located() -> None:
    answer = {
        "detections": [{"type": "system-prompt", "value": "something else", "confidence": 1}],
        "redacted_content": "[gone]",
    }
    scrubber = SystemPromptScrubber(model=routed_detector(lambda _: answer))
    text, _ = await stream(scrubber, LEAK)
    assert text == ""  # a stream window cannot use a whole-text rewrite: it is withheld


async def test_detector_failure_fails_open() -> None:
    scrubber = SystemPromptScrubber(model=MockModel([RuntimeError("down")] * 3), error_strategy="allow")
    text, chunks = await stream(scrubber, LEAK)
    assert text == LEAK and chunks[-1].type == "finish"


def test_a_finding_that_cannot_be_located_redacts_the_whole_text() -> None:
    """The judge is not asked for a redacted copy (`redacted_content: null`), so a finding it
    misquoted is not let through: the whole text is redacted instead."""
    scrubber = SystemPromptScrubber(model=MockModel([]), redaction_method="placeholder")
    misquoted = SystemPromptVerdict(
        detections=[SystemPromptDetection(type="system-prompt", value="not in the text")]
    )
    assert scrubber.redact(LEAK, misquoted) == "[SYSTEM_PROMPT]"
    masked = SystemPromptScrubber(model=MockModel([])).redact(LEAK, misquoted)
    assert masked == "*" * len(LEAK)
