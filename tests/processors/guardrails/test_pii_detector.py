"""PIIDetector through real Agent runs, the detector answering canned verdicts."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluicegate import Agent
from sluicegate.guardrails.spans import locate, substitute
from sluicegate.processors import PIIDetector
from sluicegate.processors.builtin.pii_detector import PIIDetection, mask_value
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

TEXT = "Email me at john.doe@example.com please"
EMAIL = "john.doe@example.com"


def found(
    value: str = EMAIL,
    kind: str = "email",
    confidence: float = 0.95,
    start: int | None = None,
    text: str = TEXT,
    **extra: Any,
) -> dict[str, Any]:
    begin = text.index(value) if start is None else start
    return {
        "categories": [{"type": kind, "score": confidence}],
        "detections": [
            {
                "type": kind,
                "value": value,
                "confidence": confidence,
                "start": begin,
                "end": begin + len(value),
            }
        ],
        **extra,
    }


async def run_input(processor: PIIDetector, *messages: str) -> tuple[Any, MockModel]:
    main = MockModel([text_step("ok")])
    agent = Agent(name="private", model=main, input_processors=[processor])
    return await agent.generate(list(messages) or TEXT), main


async def test_redact_masks_by_default_keeping_the_format() -> None:
    result, main = await run_input(PIIDetector(model=detector(found())), TEXT)
    assert result.tripwire is None
    assert user_texts(main.calls[0]) == ["Email me at j******e@*******.com please"]


async def test_miscounted_offsets_still_redact_every_occurrence() -> None:
    text = f"{EMAIL} and again {EMAIL}"
    answer = found(start=3, text=text)  # the model's offsets are wrong
    _, main = await run_input(PIIDetector(model=detector(answer), redaction_method="placeholder"), text)
    assert user_texts(main.calls[0]) == ["[EMAIL] and again [EMAIL]"]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"preserve_format": False}, "Email me at ******** please"),
        (
            {"redaction_method": "hash"},
            f"Email me at [HASH:{hashlib.sha256(EMAIL.encode()).hexdigest()[:8]}] please",
        ),
        ({"redaction_method": "remove"}, "Email me at  please"),
        ({"redaction_method": "placeholder"}, "Email me at [EMAIL] please"),
        ({"redaction_method": "placeholder", "placeholder_text": "<hidden>"}, "Email me at <hidden> please"),
        (
            {"redaction_method": "mask", "placeholder_text": "<hidden>"},
            "Email me at j******e@*******.com please",
        ),
    ],
)
async def test_redaction_methods(options: dict[str, Any], expected: str) -> None:
    _, main = await run_input(PIIDetector(model=detector(found()), **options), TEXT)
    assert user_texts(main.calls[0]) == [expected]


async def test_model_redacted_content_is_used_when_nothing_can_be_located() -> None:
    answer = {
        "categories": [{"type": "name", "score": 0.9}],
        "detections": None,
        "redacted_content": "Hi, I am [NAME]",
    }
    model = detector(answer)
    _, main = await run_input(PIIDetector(model=model), "Hi, I am Jane Roe")
    assert user_texts(main.calls[0]) == ["Hi, I am [NAME]"]
    assert "redacted_content" in model.calls[0].response_format["schema"]["properties"]


async def test_redact_without_any_usable_redaction_drops_the_message() -> None:
    answer = {"categories": [{"type": "name", "score": 0.9}], "detections": None}
    _, main = await run_input(PIIDetector(model=detector(answer, CLEAN)), "I am Jane Roe", "what time is it?")
    assert user_texts(main.calls[0]) == ["what time is it?"]


async def test_block_aborts_with_types_and_no_raw_pii(violations: Any) -> None:
    pii = PIIDetector(model=detector(found()), strategy="block")
    seen = violations(pii)
    result, main = await run_input(pii, TEXT)
    assert main.calls == []
    assert result.tripwire.processor_id == "pii-detector"
    assert result.tripwire.reason == "PII detected. Types: email"
    assert result.tripwire.metadata == {"types": ["email"]}
    assert EMAIL not in repr(result.tripwire) and len(seen) == 1


async def test_include_detections_reports_spans_but_not_values() -> None:
    result, _ = await run_input(
        PIIDetector(model=detector(found()), strategy="block", include_detections=True), TEXT
    )
    assert result.tripwire.reason == "PII detected. Types: email. Detections: 1 items"
    assert result.tripwire.metadata["detections"] == [
        {"type": "email", "confidence": 0.95, "start": 12, "end": 32}
    ]
    assert EMAIL not in repr(result.tripwire.metadata)


async def test_warn_passes_the_original_and_reports(violations: Any) -> None:
    pii = PIIDetector(model=detector(found()), strategy="warn")
    seen = violations(pii)
    result, main = await run_input(pii, TEXT)
    assert result.tripwire is None and user_texts(main.calls[0]) == [TEXT]
    assert [v.detail for v in seen] == [{"types": ["email"]}]


async def test_filter_drops_the_message() -> None:
    _, main = await run_input(
        PIIDetector(model=detector(found(), CLEAN), strategy="filter"), TEXT, "hello there"
    )
    assert user_texts(main.calls[0]) == ["hello there"]


@pytest.mark.parametrize(("threshold", "redacted"), [(None, False), (0.5, True), (0.55, True), (0.56, False)])
async def test_threshold_default_is_0_6(threshold: float | None, redacted: bool) -> None:
    options = {} if threshold is None else {"threshold": threshold}
    _, main = await run_input(PIIDetector(model=detector(found(confidence=0.55)), **options), TEXT)
    assert (user_texts(main.calls[0]) != [TEXT]) is redacted


async def test_category_scores_flag_when_there_are_no_detections() -> None:
    answer = {"categories": [{"type": "ssn", "score": 0.9}], "detections": []}
    result, _ = await run_input(PIIDetector(model=detector(answer), strategy="block"), "my ssn is on file")
    assert result.tripwire.metadata == {"types": ["ssn"]}


async def test_detection_types_reach_the_detector() -> None:
    model = detector(CLEAN)
    await run_input(PIIDetector(model=model, detection_types=["email", "passport"]), "hello world")
    assert "- email\n- passport" in detector_system(model.calls[0])
    enum = model.calls[0].response_format["schema"]["$defs"]["PIICategoryScore"]["properties"]["type"]["enum"]
    assert enum == ["email", "passport"]


async def test_non_redact_strategies_do_not_ask_for_redactions() -> None:
    model = detector(CLEAN)
    await run_input(PIIDetector(model=model, strategy="block"), "hello world")
    schema = model.calls[0].response_format["schema"]
    assert "redacted_content" not in schema["properties"]
    assert "redacted_value" not in schema["$defs"]["PIIDetection"]["properties"]


async def test_instructions_replace_the_default_system_prompt() -> None:
    model = detector(CLEAN)
    await run_input(PIIDetector(model=model, instructions="Find employee ids."), "hello world")
    assert detector_system(model.calls[0]) == "Find employee ids."
    assert detector_prompt(model.calls[0]).endswith('Content: "hello world"')


async def test_detector_failure_fails_open() -> None:
    result, main = await run_input(
        PIIDetector(model=detector(RuntimeError("down")), error_strategy="allow"), TEXT
    )
    assert result.tripwire is None and user_texts(main.calls[0]) == [TEXT]
    blocked, main = await run_input(PIIDetector(model=detector(RuntimeError("down"))), TEXT)
    assert blocked.tripwire is not None and main.calls == []
    fallback = PIIDetector(model=detector(RuntimeError("down")), error_strategy="fallback")
    result, main = await run_input(fallback, TEXT)
    assert result.tripwire is None and EMAIL not in user_texts(main.calls[0])[0]


# ---------------------------------------------------------------------- output


def email_route(prompt: str) -> dict[str, Any]:
    return found(text=prompt) if EMAIL in prompt else CLEAN


async def test_stream_redacts_each_flagged_delta() -> None:
    pii = PIIDetector(model=routed_detector(email_route), redaction_method="placeholder")
    agent = Agent(
        name="p", model=MockModel([deltas_step("Reach me at ", EMAIL, " today")]), output_processors=[pii]
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    assert text == "Reach me at [EMAIL] today"
    assert chunks[-1].type == "finish"


async def test_stream_filter_drops_the_delta_and_block_trips() -> None:
    steps = [deltas_step("Reach me at ", EMAIL, " today")]
    filtering = Agent(
        name="p",
        model=MockModel(list(steps)),
        output_processors=[PIIDetector(model=routed_detector(email_route), strategy="filter")],
    )
    text, _ = await stream_text(await filtering.stream("hi"))
    assert text == ""  # the whole window is withheld
    blocking = Agent(
        name="p",
        model=MockModel(list(steps)),
        output_processors=[PIIDetector(model=routed_detector(email_route), strategy="block")],
    )
    text, chunks = await stream_text(await blocking.stream("hi"))
    assert text == "" and chunks[-1].type == "tripwire"  # vetted: nothing went out before the verdict


async def test_output_result_redacts_the_response_message() -> None:
    # the stream check sees the text one delta at a time and misses it; the final check catches it
    def whole_message_only(prompt: str) -> dict[str, Any]:
        return found(text=prompt) if EMAIL in prompt and "Reach" in prompt else CLEAN

    pii = PIIDetector(model=routed_detector(whole_message_only), redaction_method="placeholder")
    agent = Agent(name="p", model=MockModel([deltas_step("Reach me at ", EMAIL)]), output_processors=[pii])
    result = await agent.generate("hi")
    assert [m.text for m in result.response.messages] == ["Reach me at [EMAIL]"]


# ---------------------------------------------------------------------- masking


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        ("555-123-4567", "phone", "XXX-XXX-4567"),
        ("123-45-6789", "ssn", "***-**-6789"),
        ("4111 1111 1111 1111", "credit-card", "**** **** **** 1111"),
        ("123e4567-e89b-12d3-a456-426614174000", "uuid", "********-****-****-****-************"),
        ("DE89370400440532013000", "iban", "DE****************3000"),
        ("0x52908400098527886E0F7030069857D2E4169EE7", "crypto-wallet", "0x52" + "*" * 34 + "9EE7"),
        ("Jane Roe", "name", "J******e"),
        ("ab", "name", "**"),
        ("a@b.co", "email", "***@*.co"),
    ],
)
def test_mask_value_preserves_the_format(value: str, kind: str, expected: str) -> None:
    assert mask_value(value, kind, preserve_format=True) == expected


def test_mask_value_without_format_is_at_most_eight_stars() -> None:
    assert mask_value("555-123-4567", "phone", preserve_format=False) == "********"
    assert mask_value("abc", "name", preserve_format=False) == "***"


@given(
    text=st.text(alphabet="ab ", max_size=40),
    value=st.text(alphabet="ab", min_size=1, max_size=4),
    start=st.integers(-5, 45),
)
def test_located_values_never_survive_redaction(text: str, value: str, start: int) -> None:
    detection = PIIDetection(type="x", value=value, confidence=1, start=start, end=start + len(value))
    redacted = substitute(text, locate(text, [detection]), lambda _v, _t: "[X]")
    assert value not in redacted


@given(digits=st.text(alphabet="0123456789-() ", min_size=1, max_size=30))
def test_phone_masking_keeps_length_and_separators(digits: str) -> None:
    masked = mask_value(digits, "phone", preserve_format=True)
    assert len(masked) == len(digits)
    assert [c for c in masked if not c.isdigit() and c != "X"] == [c for c in digits if not c.isdigit()]
    assert sum(c.isdigit() for c in masked) <= 4
