"""The schemas the LLM guardrails send their judges: bounded (every array and string has a
limit, so a complete verdict has a longest form), still Mastra's answer shape (every answer
they allow is a valid verdict), and, for the embedded model, sized so the longest verdict its
grammar allows fits `max_output_tokens`."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.processors.guardrails.conftest import verdict

from sluicegate.guardrails.judge_schema import SCORE_GRID, max_verdict_chars
from sluicegate.models._json_grammar import schema_grammar
from sluicegate.processors import (
    LanguageDetector,
    ModerationProcessor,
    PIIDetector,
    PromptInjectionDetector,
    SystemPromptScrubber,
)
from sluicegate.testing import MockModel

EMBEDDED = "local/smollm2-135m"

GUARDS: list[tuple[str, Callable[..., Any]]] = [
    ("moderation", lambda **kw: ModerationProcessor(**kw)),
    ("language", lambda **kw: LanguageDetector(**kw)),
    ("language-translate", lambda **kw: LanguageDetector(strategy="translate", **kw)),
    ("pii-redact", lambda **kw: PIIDetector(**kw)),
    ("pii-block", lambda **kw: PIIDetector(strategy="block", **kw)),
    ("injection", lambda **kw: PromptInjectionDetector(**kw)),
    ("injection-rewrite", lambda **kw: PromptInjectionDetector(strategy="rewrite", **kw)),
    ("system-prompt", lambda **kw: SystemPromptScrubber(**kw)),
]
IDS = [name for name, _ in GUARDS]

# Mastra's PIIDetector answer schema with strategy "redact" (packages/core/src/processors/
# processors/pii-detector.ts), as JSON Schema: every key present, absent values null.
MASTRA_PII_REDACT = {
    "type": "object",
    "required": ["categories", "detections", "redacted_content"],
    "properties": {
        "categories": {
            "anyOf": [
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["type", "score"],
                        "properties": {
                            "type": {"type": "string"},
                            "score": {"type": "number", "minimum": 0, "maximum": 1},
                        },
                    },
                },
                {"type": "null"},
            ]
        },
        "detections": {
            "anyOf": [
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["type", "value", "confidence", "start", "end", "redacted_value"],
                        "properties": {
                            "type": {"type": "string"},
                            "value": {"type": "string"},
                            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                            "start": {"type": "number"},
                            "end": {"type": "number"},
                            "redacted_value": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                        },
                    },
                },
                {"type": "null"},
            ]
        },
        "redacted_content": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
}


def instances(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Every JSON value `schema` allows (for the keywords the judge schemas use)."""
    defs = schema.get("$defs", {})

    def of(node: dict[str, Any]) -> st.SearchStrategy[Any]:
        if "$ref" in node:
            return of(defs[node["$ref"].rsplit("/", 1)[-1]])
        if "anyOf" in node:
            return st.one_of([of(branch) for branch in node["anyOf"]])
        if "enum" in node:
            return st.sampled_from(node["enum"])
        kind = node.get("type")
        if kind == "object":
            required = set(node.get("required", ()))
            props = node["properties"].items()
            return st.fixed_dictionaries(
                {name: of(prop) for name, prop in props if name in required},
                optional={name: of(prop) for name, prop in props if name not in required},
            )
        if kind == "array":
            return st.lists(of(node["items"]), max_size=node["maxItems"])
        if kind == "string":
            # open text (no cap) is drawn up to 50 characters
            ascii_text = st.characters(min_codepoint=32, max_codepoint=126)
            return st.text(ascii_text, max_size=node.get("maxLength", 50))
        if kind == "integer":
            return st.integers(-(10**16) + 1, 10**16 - 1)
        if kind == "null":
            return st.none()
        raise AssertionError(f"unexpected schema {node!r}")

    return of(schema)


@functools.cache
def verdict_shape(model: Any) -> dict[str, Any]:
    return dict(model.model_json_schema())


@functools.cache
def cached_detector(name: str, cap: int | None) -> Any:
    return dict(GUARDS)[name](model=EMBEDDED, max_output_tokens=cap).detector


def detector(name: str, **options: Any) -> Any:
    return dict(GUARDS)[name](model=EMBEDDED, **options).detector


@pytest.mark.parametrize("name", IDS)
@pytest.mark.parametrize("cap", [None, 512, 1024])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_verdict_the_embedded_grammar_allows_is_valid_and_fits_the_cap(
    name: str, cap: int | None, data: st.DataObject
) -> None:
    judge = cached_detector(name, cap)
    grammar_schema = judge.constrained_schema
    answer = data.draw(instances(grammar_schema))
    jsonschema.validate(answer, judge.json_schema)  # a subset of what every judge is asked
    jsonschema.validate(answer, verdict_shape(judge.schema))  # ... and of the verdict's shape
    judge.schema.model_validate(answer)  # the parsing path every provider's answer takes
    if cap is not None:
        spaced = json.dumps(answer, separators=(" , ", " : "))
        assert len(spaced) <= max_verdict_chars(grammar_schema) <= cap


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_pii_verdicts_stay_valid_mastra_answers(data: st.DataObject) -> None:
    judge = cached_detector("pii-redact", 512)
    answer = data.draw(instances(judge.constrained_schema))
    # keys after the decision may be left out, which the verdict reads as null
    jsonschema.validate({"categories": None, "redacted_content": None, **answer}, MASTRA_PII_REDACT)


@pytest.mark.parametrize("name", IDS)
def test_judge_schemas_bound_findings_and_put_the_decision_first(name: str) -> None:
    judge = detector(name)
    schema = judge.json_schema
    first = next(iter(schema["properties"]))
    assert first in ("category_scores", "categories", "detections", "iso_code")
    assert schema["required"] == [first]
    for text in (json.dumps(schema), json.dumps(judge.constrained_schema)):
        assert '"type": "array"' not in text or '"maxItems"' in text


def test_scores_are_on_a_grid_only_for_the_embedded_model() -> None:
    embedded = detector("moderation").constrained_schema
    guided = ModerationProcessor(model="openai/gpt-5-nano").detector.json_schema
    assert embedded["$defs"]["CategoryScore"]["properties"]["score"]["enum"] == list(SCORE_GRID)
    assert "enum" not in guided["$defs"]["CategoryScore"]["properties"]["score"]
    assert guided["properties"]["category_scores"]["anyOf"][0]["maxItems"] == 11


async def test_the_embedded_model_is_sent_the_constrained_schema() -> None:
    class Embedded(MockModel):
        provider = "local"

    model = Embedded([verdict({"category_scores": [], "reason": None})])
    guard = ModerationProcessor(model=model, max_output_tokens=300)
    await guard.moderate("hello there")
    assert model.calls[0].response_format is not None
    assert model.calls[0].response_format["schema"] == guard.detector.constrained_schema
    other = MockModel([verdict({"category_scores": [], "reason": None})])
    guard = ModerationProcessor(model=other, max_output_tokens=300)
    await guard.moderate("hello there")
    assert other.calls[0].response_format is not None
    assert other.calls[0].response_format["schema"] == guard.detector.json_schema


def test_embedded_grammar_honours_max_items_and_max_length() -> None:
    """The embedded model's grammar (sluicegate.models._json_grammar) bounds the verdict: at
    most `maxItems` detections, each value at most `maxLength` characters, no free repetition."""
    schema = detector("pii-redact", max_output_tokens=1024).constrained_schema
    items = schema["properties"]["detections"]["anyOf"][0]["maxItems"]
    grammar = schema_grammar(schema)
    assert grammar is not None, "the constrained verdict schema must be covered, not left to llama.cpp"
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    array = rules["root-detections-0"]
    assert "*" not in array and "+" not in array
    assert f"{{0,{items - 1}}}" in array
    value = rules["def-PIIDetection-body-value"]
    assert "*" not in value and "char{0,100}" in value
