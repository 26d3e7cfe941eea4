"""`payloads.encoded`: a step's activity call made JSON once, as the payload Temporal sends; the
other side decodes exactly what `checked` (walk into JSON, measure) would have given it."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from temporalio.common import RawValue
from temporalio.converter import DataConverter

from sluicegate.durable.temporal import PayloadTooLargeError
from sluicegate.durable.temporal.payloads import SharedRecords, checked, encoded, json_text


class WithDict:
    def to_dict(self) -> dict[str, Any]:
        return {"kind": "with-dict", "n": 1}


VALUE = {
    "prompt": [{"role": "user", "content": [{"type": "text", "text": "héllo ✓"}]}],
    "when": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    "object": WithDict(),
    "numbers": {1: "one", "two": 2.5},
    "nothing": None,
    "flags": (True, False),
}


async def test_the_other_side_decodes_what_checked_would_have_sent() -> None:
    raw = encoded("a call", VALUE)
    assert isinstance(raw, RawValue)
    converter = DataConverter.default
    payloads = await converter.encode([raw])
    assert payloads[0].data == raw.payload.data  # Temporal sends it as it is: no second encoding
    assert (await converter.decode(payloads, [dict]))[0] == checked("a call", VALUE)


def test_a_call_over_the_limit_is_refused_naming_it() -> None:
    with pytest.raises(PayloadTooLargeError, match="the model call of step 3"):
        encoded("the model call of step 3", {"prompt": "x" * 100}, limit=50)
    assert encoded("small", {"prompt": "x" * 10}, limit=50).payload.data.startswith(b'{"prompt"')


def test_a_value_json_cannot_carry_is_refused_as_checked_refuses_it() -> None:
    with pytest.raises(ValueError):
        checked("a call", {"score": math.nan})
    with pytest.raises(ValueError):
        encoded("a call", {"score": math.nan})


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=30,
)


@given(JSON)
def test_shared_records_write_json_texts_text(value: Any) -> None:
    assert SharedRecords()(value) == json_text(value)


def test_shared_records_encode_a_listed_record_once_and_splice_it_into_later_chunks() -> None:
    step_1 = {"content": [{"type": "text", "text": "one"}], "usage": {"inputTokens": 1}}
    step_2 = {"content": [{"type": "tool-call", "input": {"n": 2}}]}
    message = {"role": "user", "content": "go"}
    texts = SharedRecords()
    first = {
        "type": "step-finish",
        "payload": {"output": {"steps": [step_1]}, "messages": {"all": [message]}},
    }
    second = {
        "type": "step-finish",
        "payload": {"output": {"steps": [step_1, step_2]}, "messages": {"all": [message]}},
    }
    assert texts(first) == json_text(first)
    assert texts(second) == json_text(second)
    step_1["content"] = []  # listed already: later chunks keep the text it had (see the docstring)
    assert json.loads(texts(second))["payload"]["output"]["steps"][0]["content"] == [
        {"type": "text", "text": "one"}
    ]
    # Keys that are not text, values JSON does not know, NaN: as `json_text` does them.
    odd = {"type": "finish", "payload": {"numbers": {1: "one"}, "object": WithDict(), "steps": [{2: "two"}]}}
    assert texts(odd) == json_text(odd)
    with pytest.raises(ValueError):
        texts({"steps": [{"score": math.nan}]})


MARKER_LIKE = st.recursive(
    st.none() | st.integers() | st.text(alphabet='\x00"\\0123u', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='\x00"01', max_size=3), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(MARKER_LIKE)
def test_shared_records_write_json_texts_text_for_strings_that_look_like_their_markers(value: Any) -> None:
    assert SharedRecords()(value) == json_text(value)


def test_a_string_that_encodes_like_a_marker_leaves_the_records_text_as_json_text_writes_it() -> None:
    texts = SharedRecords()
    record = {"role": "user", "content": "\x000"}
    for value in (
        {"steps": [record], "text": "\x000"},  # a value's own string, beside a record
        {"steps": [record, {"\x001": 'a"\x00'}]},  # a key, and an escaped quote before a NUL
        {"steps": [[record], "\x00"]},
    ):
        assert texts(value) == json_text(value)
