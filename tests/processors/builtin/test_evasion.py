"""Evasions of the deterministic pattern guards: invisible format characters, fullwidth forms,
separators between digits and spelled-out emails are caught, in whole texts and streams, and
the redaction removes the original characters."""

from __future__ import annotations

import functools
import random
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.processors.builtin.test_regex_filter import drive

from sluicegate.guardrails.normalized import build_view
from sluicegate.processors import PIIDetector, RegexFilter, UnicodeNormalizer

SECRETS = {
    "email": "jane.doe@example.com",
    "card": "4111111111111111",
    "ssn": "123-45-6789",
    "phone": "555-123-4567",
    "key": "sk-abcdefghijklmnopqrstuvwxyz1234",
}
FORMAT_CHARS = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]


def interleave(value: str, sep: str) -> str:
    return sep.join(value)


def fullwidth(value: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in value)


def digits_split(value: str, sep: str) -> str:
    return sep.join(c for c in value if c.isdigit())


@functools.cache
def _filter() -> RegexFilter:
    """One filter for the module: it keeps no stream state itself (that lives in the hook's
    args), and building one compiles every preset rule."""
    return RegexFilter(presets=["pii", "secrets"], strategy="redact")


def _leaks(out: str, value: str) -> bool:
    """Whether any 4 consecutive visible characters of the value survive (in any width)."""
    visible = "".join(c for c in unicodedata.normalize("NFKC", out) if c.isalnum())
    plain = "".join(c for c in value if c.isalnum())
    return any(plain[i : i + 4] in visible for i in range(len(plain) - 3))


@pytest.mark.parametrize("name", sorted(SECRETS))
@pytest.mark.parametrize("char", FORMAT_CHARS)
def test_format_characters_between_every_character_are_caught(name: str, char: str) -> None:
    text = f"here: {interleave(SECRETS[name], char)} thanks"
    out = _filter().redact(text)
    assert char not in out and not _leaks(out, SECRETS[name]), out
    assert out.startswith("here: [") and out.endswith("] thanks")


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_fullwidth_values_are_caught_without_a_normalizer(name: str) -> None:
    out = _filter().redact(f"value {fullwidth(SECRETS[name])} end")
    assert out.startswith("value [") and out.endswith("] end"), out


@pytest.mark.parametrize("name", ["card", "ssn", "phone"])
@pytest.mark.parametrize("sep", [" ", "-", ".", " - "])
def test_separators_between_digits_are_caught(name: str, sep: str) -> None:
    value = digits_split(SECRETS[name], sep)
    out = _filter().redact(f"number {value}, ok")
    assert out.startswith("number [") and out.endswith("], ok"), out


def test_a_grouped_identity_number_keeps_its_shape() -> None:
    assert _filter().redact("ssn 1 2 3 - 4 5 - 6 7 8 9 end") == "ssn [SSN] end"


@pytest.mark.parametrize(
    "text",
    [
        "jane at example dot com",
        "jane.doe [at] example [dot] com",
        "jane (at) example.com",
        "JANE AT MAIL DOT CO DOT UK",
    ],
)
def test_spelled_out_emails_are_caught(text: str) -> None:
    assert _filter().redact(f"write to {text} today") == "write to [EMAIL] today"


@pytest.mark.parametrize(
    "text", ["Count 1 2 3 4 5 6 7 8 9 10 and go.", "Steps 1 - 2 - 3 - 4 - 5 - 6 - 7 - 8 - 9 - 10 done."]
)
def test_a_list_of_small_numbers_is_not_a_split_value(text: str) -> None:
    assert _filter().redact(text) == text


def test_ordinary_text_builds_no_view() -> None:
    assert build_view("Meet at 10:30 on 2024-01-15; it costs $12.50 (3 of 4 people).") is None


@pytest.mark.parametrize("name", sorted(SECRETS))
@pytest.mark.parametrize("variant", ["zw", "fullwidth", "spaced"])
def test_streams_catch_evasions_at_every_split(name: str, variant: str) -> None:
    value = SECRETS[name]
    if variant == "zw":
        value = interleave(value, "\u200b")
    elif variant == "fullwidth":
        value = fullwidth(value)
    elif name in {"card", "ssn", "phone"}:
        value = digits_split(value, " ")
    else:
        return
    text = f"see {value} bye"
    whole = _filter().redact(text)
    for cut in range(1, len(text)):
        pieces = drive(_filter(), [text[:cut], text[cut:]])
        assert not _leaks("".join(pieces), SECRETS[name]), (cut, pieces)
        assert "".join(pieces) == whole


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_streams_of_zero_width_evasions_in_random_chunks(data: st.DataObject) -> None:
    value = interleave(
        SECRETS[data.draw(st.sampled_from(sorted(SECRETS)))], data.draw(st.sampled_from(FORMAT_CHARS))
    )
    text = f"a {value} z"
    cuts = sorted(data.draw(st.sets(st.integers(1, len(text) - 1), max_size=6)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert "".join(drive(_filter(), pieces)) == _filter().redact(text)


def prose(count: int) -> list[str]:
    """Deterministic everyday sentences full of numbers that are not personal data."""
    rng = random.Random(7)
    names = ["Ann", "Bo", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana"]
    things = ["tickets", "apples", "invoices", "chairs", "laptops", "meetings", "pages"]
    templates = [
        "{n} bought {a} {t} for ${p}.{c:02d} on {y}-{m:02d}-{d:02d}.",
        "On {m}/{d}/{y}, {n} read {a} {t} between {h}:{mi:02d} and {h2}:{mi:02d}.",
        "The {t} cost {p},{c:03d} euros in {y}, up {a}.{c2} percent.",
        "{n} looked at the report at {h} pm: {a} of {b} {t} were late.",
        "Version {a}.{b}.{c2} ships in Q{q} {y}; see section {a}.{b}.",
        "Scores were {a}, {b} and {c2}; {n} came {q}th of {p} at {h}:{mi:02d}.",
        "Room {p} - {p2} is booked from {d} to {d2} {mon} {y} by {n}.",
        "We met {n} at the station at {h}.{mi:02d} and walked {a} km.",
        "Order {p} ships in {a} - {b} days; {n} pays {p2}.{c:02d} dollars.",
    ]
    months = ["Jan", "Feb", "March", "April", "May", "June"]
    out = []
    for _ in range(count):
        out.append(
            rng.choice(templates).format(
                n=rng.choice(names),
                t=rng.choice(things),
                a=rng.randint(1, 99),
                b=rng.randint(1, 99),
                c=rng.randint(0, 99),
                c2=rng.randint(0, 9),
                p=rng.randint(10, 9999),
                p2=rng.randint(10, 999),
                y=rng.randint(1990, 2030),
                m=rng.randint(1, 12),
                d=rng.randint(1, 28),
                d2=rng.randint(1, 28),
                h=rng.randint(1, 12),
                h2=rng.randint(1, 12),
                mi=rng.randint(0, 59),
                q=rng.randint(1, 4),
                mon=rng.choice(months),
            )
        )
    return out


def test_no_false_positives_on_ordinary_prose() -> None:
    flt = _filter()
    sentences = prose(400)
    flagged = [s for s in sentences if flt.find(s)]
    assert flagged == []


def test_unicode_normalizer_strips_format_characters_by_default() -> None:
    text = "pay\u200b me\u2060 now\ufeff"
    assert UnicodeNormalizer().normalize(text) == "pay me now"
    assert UnicodeNormalizer(strip_format_chars=False).normalize(text) == text


EVASIVE = st.sampled_from(
    [
        "\u200b",
        "\u2060",
        " ",
        "-",
        ".",
        "1",
        "4",
        "7",
        "12",
        "jane",
        " at ",
        " dot ",
        "com",
        "x",
        "＠",
        "ｅ",
        "@",
        "ex",
    ]
)


UNCAPPED = RegexFilter(presets=["pii", "secrets"], strategy="redact", stream_carryover_size=None)


@settings(max_examples=300, deadline=None)
@given(st.lists(EVASIVE, max_size=30), st.data())
def test_stream_output_equals_the_redacted_whole_text(atoms: list[str], data: st.DataObject) -> None:
    text = "".join(atoms)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=10)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert "".join(drive(UNCAPPED, pieces)) == UNCAPPED.redact(text)


def test_pii_detector_offline_pass_sees_through_zero_width_characters() -> None:
    verdict = PIIDetector(strategy="redact").pattern_verdict("mail j\u200bane@example.com")
    assert [d.type for d in verdict.detections] == ["email"]
    assert verdict.detections[0].value == "j\u200bane@example.com"


SPELLED = [
    "write to jane at example dot com please",
    "write to jane [at] example [dot] com please",
    "write to jane (at) mail dot example dot org please",
]


@pytest.mark.parametrize("text", SPELLED)
def test_a_spelled_out_address_split_anywhere_is_redacted_whole(text: str) -> None:
    """Released, "jane " or "jane at ex" would leave a rest that is no address on its own."""
    expected = UNCAPPED.redact(text)
    assert "jane" not in expected
    for one in range(len(text) + 1):
        for two in range(one, len(text) + 1, 3):
            pieces = [text[:one], text[one:two], text[two:]]
            streamed = "".join(drive(UNCAPPED, pieces))
            assert streamed == expected, (pieces, streamed)


def test_prose_with_at_is_held_only_while_it_could_be_an_address() -> None:
    """ "we met at the station" cannot continue into an address once "the station" follows."""
    out = drive(UNCAPPED, ["we met ", "at the ", "station and ", "left"])
    assert "".join(out) == "we met at the station and left"
    assert out[0] == "we " and "station" in "".join(out[:3])
