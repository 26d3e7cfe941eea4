"""What `PIIDetector` asks its judge model for: the verdict's schema, the default instructions
and the bounds of the schema the model is given. Kept apart from the processor so the judge's
contract reads in one place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic

from sluicegate.guardrails.detector import Verdict, restrict_enum
from sluicegate.guardrails.judge_schema import JudgeLimits

DEFAULT_DETECTION_TYPES: tuple[str, ...] = (
    "email",
    "phone",
    "credit-card",
    "ssn",
    "api-key",
    "ip-address",
    "name",
    "address",
    "date-of-birth",
    "url",
    "uuid",
    "crypto-wallet",
    "iban",
)


class PIICategoryScore(Verdict):
    type: str = pydantic.Field(description="The type of PII detected, from the list of detection types")
    score: float = pydantic.Field(
        ge=0, le=1, description="Confidence between 0 and 1 indicating how certain the detection is"
    )


class PIIDetection(Verdict):
    type: str = pydantic.Field(description="Type of PII detected")
    value: str = pydantic.Field(description="The PII value found, exactly as it appears in the text")
    confidence: float = pydantic.Field(ge=0, le=1, description="Confidence of this detection")
    start: int = pydantic.Field(default=-1, description="Start position in the text")
    end: int = pydantic.Field(default=-1, description="End position in the text")
    redacted_value: str | None = pydantic.Field(default=None, description="Redacted version of the value")


class PIIVerdict(Verdict):
    categories: list[PIICategoryScore] | None = pydantic.Field(
        default=None, description="Array of detected PII types with their confidence scores"
    )
    detections: list[PIIDetection] | None = pydantic.Field(
        default=None, description="Array of specific PII detections with locations"
    )
    redacted_content: str | None = pydantic.Field(
        default=None, description="The content with all PII redacted according to the redaction method"
    )


def default_instructions(detection_types: Sequence[str]) -> str:
    listed = "\n".join(f"- {kind}" for kind in detection_types)
    return (
        "You are a PII (personally identifiable information) detection specialist. You identify and "
        "locate sensitive personal information in text for privacy compliance.\n\n"
        f"Detect and analyze these PII types:\n{listed}\n\n"
        "IMPORTANT: include only PII types that are actually present. When there is no PII, return "
        "empty arrays for categories and detections. List each PII value once, copied exactly "
        "from the text."
    )


def judge_limits(detection_types: Sequence[str]) -> JudgeLimits:
    """How the judge's schema is bounded (see `guardrails.judge_schema`): the detections decide and come
    first; the redaction is sluicegate's own, so the redacted copies and the per-type scores
    (read only when there are no detections) are not asked for."""
    return JudgeLimits(
        order=("detections", "categories", "redacted_content"),
        findings={"detections": 16},
        lengths={"value": 100},
        enums={"type": detection_types},
        null_only=("categories", "redacted_value", "redacted_content"),
    )


def judge_json_schema(strategy: str, detection_types: Sequence[str]) -> dict[str, Any]:
    """The JSON schema the judge answers in: its types limited to `detection_types`; the
    model's redacted copies asked for only with `strategy="redact"` (they are a fallback there)."""
    schema = PIIVerdict.model_json_schema()
    if strategy != "redact":
        schema["properties"].pop("redacted_content", None)
        schema["$defs"]["PIIDetection"]["properties"].pop("redacted_value", None)
    return restrict_enum(schema, "PIICategoryScore", "type", detection_types)
