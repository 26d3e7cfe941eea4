"""Structured output: validation-feedback retries, JSON-schema dicts checked with jsonschema,
`StructuredOutputError` carrying the model's text, and partial objects while streaming."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluicegate import Agent
from sluicegate.agent.structured import parse_partial_json
from sluicegate.errors import ConfigurationError, StructuredOutputError
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step


class City(pydantic.BaseModel):
    name: str
    population: int


CITY_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer", "minimum": 0}},
    "required": ["name", "population"],
    "additionalProperties": False,
}


def last_user_text(prompt: list[dict[str, Any]]) -> str:
    message = [m for m in prompt if m["role"] == "user"][-1]
    return "".join(part["text"] for part in message["content"] if part["type"] == "text")


async def test_a_mismatch_is_sent_back_and_the_corrected_answer_is_the_result() -> None:
    model = MockModel([text_step('{"name": "Paris"}'), text_step('{"name": "Paris", "population": 2100000}')])
    agent = Agent("geo", model=model, structured_output=City)
    result = await agent.generate("Biggest French city?")
    assert result.object == City(name="Paris", population=2100000)
    assert result.text == '{"name": "Paris", "population": 2100000}'
    feedback = last_user_text(model.calls[1].prompt)
    assert "population: Field required" in feedback
    assert "http" not in feedback  # no pydantic documentation link reaches the model
    # the model sees its own rejected answer before the feedback
    assert model.calls[1].prompt[-2]["role"] == "assistant"
    assert [s.finish_reason for s in result.steps] == ["stop", "stop"]


async def test_out_of_retries_raises_with_the_models_text() -> None:
    model = MockModel([text_step("not json"), text_step('{"name": 3}')])
    agent = Agent("geo", model=model, structured_output=City, output_retries=1)
    with pytest.raises(StructuredOutputError) as caught:
        await agent.generate("x")
    error = caught.value
    assert error.text == '{"name": 3}'
    assert error.attempts == 2
    assert any(line.startswith("name:") for line in error.errors)
    assert any(line.startswith("population:") for line in error.errors)
    assert "errors.pydantic.dev" not in str(error)


async def test_output_retries_zero_fails_on_the_first_mismatch_and_a_call_option_overrides() -> None:
    agent = Agent("geo", model=MockModel([text_step("{}")]), structured_output=City, output_retries=0)
    with pytest.raises(StructuredOutputError):
        await agent.generate("x")
    model = MockModel([text_step("{}"), text_step("{}"), text_step('{"name": "A", "population": 1}')])
    agent = Agent("geo", model=model, structured_output=City, output_retries=0)
    result = await agent.generate("x", output_retries=2)
    assert result.object == City(name="A", population=1)
    assert len(model.calls) == 3


async def test_bad_output_retries_values_are_rejected() -> None:
    with pytest.raises(ConfigurationError, match="output_retries"):
        Agent("geo", model=MockModel([]), output_retries=-1)
    agent = Agent("geo", model=MockModel([text_step("{}")]))
    with pytest.raises(ConfigurationError, match="output_retries"):
        await agent.generate("x", output_retries=True)  # type: ignore[typeddict-item]


async def test_a_json_schema_dict_is_validated_with_jsonschema() -> None:
    model = MockModel(
        [text_step('{"name": "Oslo", "population": -5}'), text_step('{"name": "Oslo", "population": 700000}')]
    )
    agent = Agent("geo", model=model)
    result = await agent.generate("x", structured_output=CITY_SCHEMA)
    assert result.object == {"name": "Oslo", "population": 700000}
    assert "population: -5 is less than the minimum of 0" in last_user_text(model.calls[1].prompt)
    assert model.calls[0].response_format == {"type": "json", "schema": CITY_SCHEMA}


async def test_an_invalid_json_schema_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="not a valid JSON schema"):
        Agent("geo", model=MockModel([]), structured_output={"type": "no-such-type"})


async def test_the_streamed_object_and_partial_objects() -> None:
    text = '{"name": "Paris", "population": 2100000}'
    agent = Agent("geo", model=MockModel([text_step(text, pieces=12)]), structured_output=City)
    output = await agent.stream("x")
    partials = [p async for p in output.object_stream]
    assert partials[-1] == {"name": "Paris", "population": 2100000}
    assert {"name": "Paris"} in partials
    assert all(isinstance(p, dict) for p in partials)
    assert len(partials) == len({json.dumps(p) for p in partials})  # each one is new
    assert await output.object == City(name="Paris", population=2100000)


def test_partial_json_closes_what_is_open() -> None:
    assert parse_partial_json('{"a": "Pa') == {"a": "Pa"}
    assert parse_partial_json('{"a": [1, 2') == {"a": [1, 2]}
    assert parse_partial_json('{"a": 1, "b') == {"a": 1}
    assert parse_partial_json('{"a": tr') == {}
    assert parse_partial_json('```json\n{"a": {"b": null') == {"a": {"b": None}}
    assert parse_partial_json("Sure! here") is None
    assert parse_partial_json("") is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), json_values, max_size=4), st.data())
def test_every_prefix_of_a_document_reads_as_a_dict_and_the_whole_as_itself(
    value: dict[str, Any], data: st.DataObject
) -> None:
    text = json.dumps(value)
    cut = data.draw(st.integers(min_value=1, max_value=len(text)))
    partial = parse_partial_json(text[:cut])
    assert partial is None or isinstance(partial, dict)
    assert parse_partial_json(text) == value
