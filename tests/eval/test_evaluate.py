"""`evaluate` from Python: its option checks, and detector metering that counts only the
evaluation's own calls, however often the same processors are evaluated."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sluicegate.errors import ConfigurationError
from sluicegate.guardrails.evaluation import Example, GoldSpan, evaluate
from sluicegate.guardrails.evaluation.metering import Metered
from sluicegate.models.base import CallOptions
from sluicegate.processors import PIIDetector
from sluicegate.testing import MockModel, text_step

TEXT = "Call Ann Lee today"
EXAMPLES = [Example(1, TEXT, (GoldSpan(5, 12, "PERSON"),), None)]


def _judge(options: CallOptions) -> list[dict[str, Any]]:
    found = [{"type": "name", "value": "Ann Lee", "confidence": 0.9}]
    return text_step(json.dumps({"detections": found}), input_tokens=100, output_tokens=10)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"phase": "sideways"}, "phase must be one of input, output"),
        ({"chunk_chars": 0}, "chunk_chars must be a positive integer"),
        ({"chunk_chars": True}, "chunk_chars must be a positive integer"),
    ],
)
async def test_bad_options_are_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        await evaluate([PIIDetector()], EXAMPLES, **options)
    with pytest.raises(ConfigurationError, match="no input processors"):
        await evaluate([], EXAMPLES)


async def test_only_the_evaluations_own_detector_calls_count() -> None:
    pii = PIIDetector(model=MockModel([_judge] * 10, model_id="gpt-5-nano"), redaction_method="placeholder")
    first = await evaluate([pii], EXAMPLES)
    assert pii.detector is not None and isinstance(pii.detector.model, Metered)
    # A call outside any evaluation (the app serving a request) while another evaluation runs.
    outside, second = await asyncio.gather(pii.detect(TEXT), evaluate([pii], EXAMPLES + EXAMPLES))
    assert outside is not None and outside.detections
    assert (first.detector_calls, second.detector_calls) == (1, 2)  # wrapped once, not twice
    assert second.input_tokens == 200 and second.output_tokens == 20
    assert second.cost == pytest.approx((200 * 0.05 + 20 * 0.4) / 1_000_000)
    assert second.kinds["PERSON"].caught == 2 and second.unpriced_models == []


async def test_an_unpriced_detector_model_is_named() -> None:
    pii = PIIDetector(model=MockModel([_judge], model_id="house-judge-7b"))
    report = await evaluate([pii], EXAMPLES)
    assert report.detector_calls == 1 and report.cost == 0.0 and report.unpriced_models == ["house-judge-7b"]
