"""The structured recognizers on the shapes the PII quality benchmark found them missing or
over-taking: national numbers of other countries, JCB's 15-digit cards, version strings that
look like IPv4 addresses, dates and times that look like phone numbers, and IBANs split
character by character."""

from __future__ import annotations

import pytest

from sluicegate.guardrails.regex_rules import DEFAULT_PHONE_REGIONS, PII_RULES, phone_rule
from sluicegate.guardrails.validators import card_valid, phone_valid
from sluicegate.processors import PIIDetector, RegexFilter

from .test_pii_recognizers import drive

FILTER = RegexFilter(presets=["pii", "urls"], strategy="redact")


@pytest.mark.parametrize(
    "number",
    [
        "06-82237745",  # France, no country code
        "07700 316 475",  # UK mobile
        "(07700) 254202",
        "(73) 4746-3459",  # Brazil
        "(03) 5336 6879",  # Australia
        "0370 5758447",  # Germany
        "730 064 218",
        "01.84.63.10.33",
        "+41 (0)29 826 56 45",  # possible, though not assigned
        "(125)070-9473x648",
        "439 4166",  # a local US number
    ],
)
def test_national_numbers_of_other_countries_are_phones(number: str) -> None:
    assert FILTER.redact(f"Call me on {number}.") == "Call me on [PHONE]."


def test_an_escaped_newline_before_a_number_does_not_hide_it() -> None:
    text = "Address: 12 Main St\\n+447700556093 fax\\n0623261261"
    assert FILTER.redact(text) == "Address: 12 Main St\\n[PHONE] fax\\n[PHONE]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("On 2010-12-15 13:24:14.149, it rained", "On 2010-12-15 13:24:14.149, it rained"),
        ("rv:1.9.2.20) Gecko/4127-04-04 07:02:55.314659 Firefox", None),
        ("AppleWebKit/535.26.7 (KHTML) Chrome/50.0.870.0 Safari/6532.5.7", None),
        ("CriOS/13.0.802.0 Mobile/88X634", None),
        ("took 32.096414 s, version 15.38.10", None),
        ("shipped to 7015 184 Arnott Heights", None),
        ("grew from 577 884 210 to 411,210,966 people", None),
        ("steps 1 2 3 4 5 6 7 8 9 10", None),
        ("ip = ?%//!%20\\|69.56.161.185|%20/", "ip = ?%//!%20\\|[IP_ADDRESS]|%20/"),
        ("setting address 63.195.85.176 blocked", "setting address [IP_ADDRESS] blocked"),
        ("host v1.2.3.4 and ip=10.0.0.1", "host v1.2.3.4 and ip=[IP_ADDRESS]"),
    ],
)
def test_dates_times_versions_and_addresses_are_not_phones(text: str, expected: str | None) -> None:
    assert FILTER.redact(text) == (text if expected is None else expected)


@pytest.mark.parametrize(
    "card", ["180092617964050", "213128569146303", "3509000644840571", "6221260000000000"]
)
def test_jcb_and_other_issuer_ranges_are_cards(card: str) -> None:
    assert card_valid(card)
    assert FILTER.redact(f"card {card} lost") == "card [CREDIT_CARD] lost"


def test_numbers_outside_issuer_ranges_or_after_a_plus_are_not_cards() -> None:
    assert not card_valid("21 259 671 6259")  # Luhn-valid, but no issuer's 13-digit range
    assert not card_valid("1700000000005")
    assert FILTER.redact("Phone: 21 259 671 6259") == "Phone: [PHONE]"
    assert FILTER.redact("office\n+447700256459 fax") == "office\n[PHONE] fax"


def test_phone_regions_choose_the_plans_a_national_number_is_tried_in() -> None:
    assert phone_valid("06-82237745") and not phone_valid("06-82237745", ("US",))
    us_only = RegexFilter(rules=[phone_rule(["US"])], strategy="redact")
    assert us_only.redact("call 06-82237745 or 415-555-0134") == "call 06-82237745 or [PHONE]"
    assert next(r for r in PII_RULES if r.name == "phone").validate is phone_valid
    assert DEFAULT_PHONE_REGIONS[0] == "US"


@pytest.mark.parametrize("regions", [[], ["XX"], ["US", "uk"]])
def test_unknown_phone_regions_are_refused_by_name(regions: list[str]) -> None:
    with pytest.raises(ValueError, match="phone_regions"):
        phone_rule(regions)


SPLIT_IBANS = [
    "GB3 4QIRA1 8 4 5 1 4 6 2 7 0 4 8 2 8",
    "GB3-4QIRA1-8-4-5-1-4-6-2-7-0-4-8-2-8",
    "G B 3 4 Q I R A 1 8 4 5 1 4 6 2 7 0 4 8 2 8",
]


@pytest.mark.parametrize("iban", SPLIT_IBANS)
def test_an_iban_split_character_by_character_is_found(iban: str) -> None:
    assert FILTER.redact(f"send it to {iban} TODAY") == "send it to [IBAN] TODAY"
    assert FILTER.redact(f"IBAN {iban}") == "IBAN [IBAN]"


def test_a_split_iban_failing_mod_97_passes_through() -> None:
    text = "ref GB3 4QIRA1 8 4 5 1 4 6 2 7 0 4 8 2 9 ok"
    assert FILTER.redact(text) == text


PII_ONLY = RegexFilter(presets=["pii"], strategy="redact")  # stream state lives in the hook's args


@pytest.mark.parametrize("iban", SPLIT_IBANS[:2])
def test_a_split_iban_streamed_in_pieces_does_not_leak(iban: str) -> None:
    text = f"to {iban} now"
    for cut in range(3, len(text)):
        streamed = drive(PII_ONLY, [text[:cut], text[cut:]])
        assert streamed == "to [IBAN] now", cut
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
    assert drive(PII_ONLY, pieces) == "to [IBAN] now"


def test_pii_detector_takes_phone_regions() -> None:
    text = "call 06-82237745 or 415-555-0134"
    default = PIIDetector(redaction_method="placeholder")
    us_only = PIIDetector(redaction_method="placeholder", phone_regions=["US"])
    assert default.patterns.redact(text) == "call [PHONE] or [PHONE]"
    assert us_only.patterns.redact(text) == "call 06-82237745 or [PHONE]"
    with pytest.raises(ValueError, match="phone_regions"):
        PIIDetector(phone_regions=["Atlantis"])


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        ("(7 3) 4 7 4 6-3 4 5 9", "[PHONE]"),  # area code in parentheses, split too
        ("(8-9-4)1-3-4-3-5-2-4", "[PHONE]"),
        ("+4 1 (0)2 7 2 4 0 0 4 9 9", "[PHONE]"),  # country code split before `(0)`
        ("+1-6 2 5-5 4 4-8 0 7 7x8 1 6", "[PHONE]"),  # extension split
        ("2-0-3-3-7-0-4-8", "[PHONE]"),
        ("4 3 9 4 1 6 6", "[PHONE]"),  # a local number: seven digits take the ddd-dddd shape
        ("8-7-4-7-9-8", "[PHONE]"),
    ],
)
def test_phone_numbers_split_digit_by_digit_are_found(number: str, expected: str) -> None:
    assert FILTER.redact(f"Phone: {number} (mobile)") == f"Phone: {expected} (mobile)"


def test_split_digits_after_an_escaped_newline_are_joined() -> None:
    assert FILTER.redact("office\\n0 3 8 0 7 5 5 8 5 0 5 fax") == "office\\n[PHONE] fax"
