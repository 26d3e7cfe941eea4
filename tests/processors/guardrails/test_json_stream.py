"""The incremental JSON lexer behind streamed tool-call arguments: cut anywhere, it decodes
exactly what `json.loads` reads, says when each string and number is complete, and fails
closed on text that is not JSON."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sluicegate.guardrails.json_stream import (
    CLOSE,
    MALFORMED,
    NUMBER,
    OPEN,
    RAW,
    TEXT,
    JsonTokens,
    encode_text,
    lenient_text,
    number_texts,
)


def lex(text: str, cuts: list[int]) -> list[tuple[int, str]]:
    """The events of `text` fed in pieces cut at `cuts`, adjacent RAW and TEXT events joined."""
    tokens = JsonTokens()
    events: list[tuple[int, str]] = []
    bounds = [0, *sorted(set(cuts)), len(text)]
    for start, end in itertools.pairwise(bounds):
        events.extend(tokens.feed(text[start:end]))
    events.extend(tokens.finish())
    joined: list[tuple[int, str]] = []
    for kind, value in events:
        if joined and kind in (RAW, TEXT) and joined[-1][0] == kind:
            joined[-1] = (kind, joined[-1][1] + value)
        else:
            joined.append((kind, value))
    return joined


def rebuild(events: list[tuple[int, str]]) -> str:
    """The JSON the events describe, strings re-encoded from their decoded text."""
    out = []
    for kind, value in events:
        if kind in (OPEN, CLOSE):
            out.append('"')
        elif kind == TEXT:
            out.append(encode_text(value))
        elif kind in (RAW, NUMBER):
            out.append(value)
        else:
            raise AssertionError(f"malformed: {value!r}")
    return "".join(out)


def test_an_escape_split_across_deltas_decodes_whole() -> None:
    raw = '{"to": "jane.doe\\u0040example.com"}'
    for cut in range(1, len(raw)):
        events = lex(raw, [cut])
        texts = [v for k, v in events if k == TEXT]
        assert "jane.doe@example.com" in texts, cut


def test_a_surrogate_pair_split_anywhere_is_one_character() -> None:
    raw = '["a\\ud83d\\ude00b", "\\ud83d", "\\ud83dx"]'
    for cut in range(1, len(raw)):
        for second in range(cut, len(raw)):
            events = lex(raw, [cut, second])
            assert [v for k, v in events if k == TEXT] == ["a\U0001f600b", "\ud83d", "\ud83dx"]
    assert json.loads(rebuild(lex(raw, []))) == json.loads(raw)


def test_numbers_are_whole_tokens_once_a_delimiter_or_the_end_arrives() -> None:
    raw = '{"a": 4.111111111111111e15, "b": [-0.5, 12345678901234567890123], "c": 7}'
    for cut in range(1, len(raw)):
        numbers = [v for k, v in lex(raw, [cut]) if k == NUMBER]
        assert numbers == ["4.111111111111111e15", "-0.5", "12345678901234567890123", "7"], cut
    assert [v for k, v in lex("42", [1]) if k == NUMBER] == ["42"]  # a bare number ends with the input


def test_number_texts_write_exponents_out_and_refuse_huge_ones() -> None:
    assert number_texts("4.111111111111111e15") == ["4.111111111111111e15", "4111111111111111"]
    assert number_texts("4111111111111111") == ["4111111111111111"]
    assert number_texts("1.5") == ["1.5"]
    assert number_texts("1e999999") == ["1e999999"]
    assert number_texts("1e-999999") == ["1e-999999"]


def test_literals_and_structure_pass_as_raw() -> None:
    events = lex('{"k": [true, false, null]}', [3, 9, 15])
    assert [k for k, _ in events] == [RAW, OPEN, TEXT, CLOSE, RAW]
    assert events[-1] == (RAW, ": [true, false, null]}")


def test_text_that_is_not_json_is_malformed_from_there_on() -> None:
    cases = {
        "{to: jane@example.com}": "to: jane@example.com}",
        '{"a": "b\\x40c"}': '\\x40c"}',
        '{"a": "b\\u00zz"}': '\\u00zz"}',
        '{"a": 4111-1111}': "4111-1111}",
        '{"a": tru3}': "tru3}",
        '{"a": trueish}': "ish}",  # a complete literal is structure
    }
    for raw, rest in cases.items():
        for cut in range(1, len(raw)):
            events = lex(raw, [cut])
            malformed = "".join(v for k, v in events if k == MALFORMED)
            assert malformed == rest, (raw, cut, events)


def test_an_open_string_at_the_end_is_malformed() -> None:
    tokens = JsonTokens()
    tokens.feed('{"a": "jane\\u00')
    assert tokens.finish() == [(MALFORMED, "\\u00")] and tokens.malformed


def test_lenient_text_reads_escapes_of_broken_json() -> None:
    assert lenient_text('{"to": "jane\\u0040ex.com"') == '{"to": "jane@ex.com"'
    assert lenient_text("\\ud83d\\ude00 \\n") == "\U0001f600 \n"
    assert lenient_text("jane\\x40ex.com") == "jane@ex.com"


def test_encode_text_escapes_a_lone_surrogate() -> None:
    assert encode_text("a\ud83d") == "a\\ud83d"
    assert encode_text('é"\n') == 'é\\"\\n'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.booleans(), st.lists(st.integers(min_value=1, max_value=400), max_size=8))
def test_any_json_cut_anywhere_decodes_as_json_loads_reads_it(
    value: Any, ascii_only: bool, cuts: list[int]
) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only)
    events = lex(raw, [c for c in cuts if c < len(raw)])
    assert json.loads(rebuild(events)) == json.loads(raw)
