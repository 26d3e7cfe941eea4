"""The chunks an activity carries to the run log travel packed (`names.PACKED_FORMAT`): what
the activity unpacks is what the workflow packed, text for text; what cannot be a packing is
refused, never written."""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluicegate.durable.temporal.packed_chunks import (
    PACK_FROM,
    carried_texts,
    packed_texts,
    unpacked_texts,
)
from sluicegate.durable.temporal.payloads import json_text

CHUNK = st.fixed_dictionaries(
    {"type": st.sampled_from(["text-delta", "tool-result", "step-finish"]), "payload": st.text(max_size=400)}
)


@given(st.lists(CHUNK, min_size=1, max_size=12))
def test_what_is_packed_unpacks_to_the_same_texts(chunks: list[dict[str, Any]]) -> None:
    texts = [json_text(chunk) for chunk in chunks]  # newlines, quotes, NULs: escaped by JSON
    packed = packed_texts(texts)
    if sum(map(len, texts)) + len(texts) - 1 < PACK_FROM:
        assert packed is None
    else:
        assert packed is not None and unpacked_texts(packed) == texts


def test_a_step_finish_travels_in_a_sixth_of_its_size() -> None:
    step = {
        "content": [{"type": "tool-call", "toolCallId": "c1", "input": {"n": 1}}],
        "usage": {"inputTokens": 1},
    }
    finish = json_text({"type": "step-finish", "payload": {"output": {"steps": [step] * 20}}})
    packed = packed_texts([finish])
    assert packed is not None and len(packed) * 6 < len(finish)


def test_short_texts_and_texts_that_hold_a_newline_travel_as_they_are() -> None:
    assert packed_texts(['{"type":"start"}']) is None
    assert packed_texts(["x" * PACK_FROM, "a\nb"]) is None  # a newline would split it in two
    assert packed_texts(["x" * PACK_FROM]) is not None


@pytest.mark.parametrize(
    "packed",
    [
        "not base64!",
        base64.b64encode(b"not zlib").decode(),
        base64.b64encode(zlib.compress(b'{"a":1}')[:-3]).decode(),  # cut short
        base64.b64encode(zlib.compress(b'{"a":1}') + b"more").decode(),  # followed by other data
        base64.b64encode(zlib.compress(b"\xff\xfe")).decode(),  # not UTF-8
    ],
)
def test_what_is_not_a_packing_is_refused(packed: str) -> None:
    with pytest.raises(ValueError, match="packed chunks"):
        unpacked_texts(packed)


def test_a_packing_that_unpacks_past_the_limit_is_refused() -> None:
    bomb = base64.b64encode(zlib.compress(b"x" * 100_000)).decode()
    with pytest.raises(ValueError, match="more than 10000 bytes"):
        unpacked_texts(bomb, limit=10_000)


def test_packed_texts_must_fill_the_offsets_the_carry_names() -> None:
    texts = [json_text({"type": "tool-result", "payload": "x" * PACK_FROM}), '{"type":"step-finish"}']
    packed = packed_texts(texts)
    assert packed is not None
    assert carried_texts({"offset": 4, "end": 6, "packed": packed}) == texts
    with pytest.raises(ValueError, match="offsets 4 to 7 but holds 2 chunks"):
        carried_texts({"offset": 4, "end": 7, "packed": packed})
    assert carried_texts({"offset": 4, "chunks": ["{}"], "end": 5}) == ["{}"]  # a short or older carry
    assert [json.loads(text)["type"] for text in texts] == ["tool-result", "step-finish"]
