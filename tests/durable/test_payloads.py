"""`payloads.encoded`: a step's activity call made JSON once, as the payload Temporal sends; the
other side decodes exactly what `checked` (walk into JSON, measure) would have given it."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.common import RawValue
from temporalio.converter import DataConverter

from sluicegate.durable.temporal import PayloadTooLargeError
from sluicegate.durable.temporal.payloads import checked, encoded


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
