"""Structured PII recognizers: each kind is found in several formats, confirmed by its check
(look-alikes that fail it pass through), stays precise on PII-free prose, code and logs, and is
still caught when a stream splits it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sluicegate.guardrails.validators import (
    base58check_valid,
    bech32_valid,
    card_valid,
    iban_valid,
    ip_valid,
    phone_valid,
)
from sluicegate.processors import PIIDetector, ProcessOutputStreamArgs, RegexFilter
from sluicegate.request_context import RequestContext
from sluicegate.stream import Chunk
from sluicegate.stream.chunk import text_delta

from .pii_corpus import KINDS, pii_free, positives

FILTER = RegexFilter(presets=["pii", "urls"], strategy="redact")


def _abort(*_: Any, **__: Any) -> None:
    raise AssertionError("abort")


def drive(processor: RegexFilter, pieces: list[str]) -> str:
    args = ProcessOutputStreamArgs(abort=_abort, request_context=RequestContext())
    out: list[str] = []
    for chunk in [*(text_delta("r", "t1", p) for p in pieces), Chunk("text-end", "r")]:
        args.part = chunk
        result = processor.process_output_stream(args)
        for item in result if isinstance(result, list) else [result]:
            if item is not None and item.type == "text-delta":
                out.append(item.payload.text)
    out.extend(item.payload.text for item in processor.flush_output_stream(args) if item.type == "text-delta")
    return "".join(out)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Call +1-938-677-4964x990 now", "Call [PHONE] now"),
        ("UK +44 20 7946 0958.", "UK [PHONE]."),
        ("DE +49 30 901820, FR +33 1 42 68 53 00", "DE [PHONE], FR [PHONE]"),
        ("US (415) 555-2671 or 415.555.2671", "US [PHONE] or [PHONE]"),
        ("Maestro 675900000000 ok", "Maestro [CREDIT_CARD] ok"),
        ("19 digits 4000000000000000030", "19 digits [CREDIT_CARD]"),
        ("grouped 6011 0000 0000 0000 050", "grouped [CREDIT_CARD]"),
        ("IBAN DE89 3704 0044 0532 0130 00", "IBAN [IBAN]"),
        ("GB82WEST12345698765432 and FR1420041010050500013M02606", "[IBAN] and [IBAN]"),
        ("NO9386011117947", "[IBAN]"),
        ("host 192.168.1.1, version-like 1.2.3.4.", "host [IP_ADDRESS], version-like [IP_ADDRESS]."),
        (
            "v6 2001:db8::1 and ::1 and fe80::1ff:fe23:4567:890a",
            "v6 [IP_ADDRESS] and [IP_ADDRESS] and [IP_ADDRESS]",
        ),
        ("mapped ::ffff:192.0.2.1 here", "mapped [IP_ADDRESS] here"),
        ("see https://shop.example.com/a/b?id=7&x=y", "see [URL]"),
        ("btc 1BoatSLRHtKNngkdXEeobR76b53LETtpyT", "btc [CRYPTO_WALLET]"),
        ("segwit bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "segwit [CRYPTO_WALLET]"),
        ("eth 0x52908400098527886E0F7030069857D2E4169EE7", "eth [CRYPTO_WALLET]"),
    ],
)
def test_each_kind_is_found_in_several_formats(text: str, expected: str) -> None:
    assert FILTER.redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "luhn-invalid 4111 1111 1111 1112",
        "bad checksum DE88370400440532013000",
        "not an address 999.1.1.1",
        "times 12:30:45 and a[::2] and std::vector",
        "epoch 1700000000005 ms",  # Luhn-valid, but no card starts with 1
        "btc 1BoatSLRHtKNngkdXEeobR76b53LETtpyU",  # base58check fails
        "segwit bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdr",  # bech32 fails
        "+44 20 7946 09",  # too short for the UK plan
        "year list 2019 2020 2021 and 1 234 567",
    ],
)
def test_look_alikes_that_fail_their_check_pass_through(text: str) -> None:
    assert FILTER.redact(text) == text


def test_validators_directly() -> None:
    assert card_valid("6759 0000 0001") is False and card_valid("675900000000")
    assert iban_valid("DE89 3704 0044 0532 0130 00") and not iban_valid("DE89 3704 0044 0532 0130 01")
    # Mod 97 accepts these joined to the next number's digits; their country's length does not.
    assert iban_valid("DE26950151659102920619") and not iban_valid("DE26950151659102920619309")
    assert iban_valid("GB46NWBK91243809225128") and not iban_valid("GB46NWBK91243809225128762429")
    assert ip_valid("::1") and not ip_valid("::") and not ip_valid("256.1.1.1")
    assert phone_valid("+1-938-677-4964x990") and not phone_valid("+1 123 456 7890")
    assert not phone_valid("(055) 123-4567", ("US",))  # no North American area code starts with 0
    assert phone_valid("(055) 123-4567")  # a national number in other plans
    assert base58check_valid("1BoatSLRHtKNngkdXEeobR76b53LETtpyT")
    assert bech32_valid("bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")
    assert not bech32_valid("bc1QAR0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")  # mixed case


def _covered(text: str, start: int, end: int) -> bool:
    covered: set[int] = set()
    for a, b, _ in FILTER.find(text):
        covered.update(range(a, b))
    return set(range(start, end)) <= covered


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_leaks_at_most_two_percent_with_precision_095(kind: str) -> None:
    """Leak: a value not wholly covered by detections. Precision: this kind's detections on the
    positives against its detections on 2,400 PII-free prose, code and log lines."""
    samples = positives(kind)
    leaked = [text[s:e] for text, s, e in samples if not _covered(text, s, e)]
    assert len(leaked) <= 0.02 * len(samples), leaked[:5]
    true = sum(
        any(rule.name == kind and a < e and b > s for a, b, rule in FILTER.find(t)) for t, s, e in samples
    )
    false = [t[a:b] for t in NEGATIVES for a, b, rule in FILTER.find(t) if rule.name == kind]
    assert true / (true + len(false)) >= 0.95, false[:5]


NEGATIVES = pii_free()


def test_the_pii_free_corpus_is_large_and_almost_untouched() -> None:
    assert len(NEGATIVES) >= 2000
    flagged = [t for t in NEGATIVES if FILTER.find(t)]
    assert len(flagged) <= 0.01 * len(NEGATIVES), flagged[:5]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_value_split_across_chunks_is_still_caught(kind: str) -> None:
    for text, start, end in positives(kind, count=8):
        whole = FILTER.redact(text)
        for cut in range(start, end + 1):
            streamed = drive(FILTER, [text[:cut], text[cut:]])
            assert streamed == whole, (text, cut)
            assert text[start:end] not in streamed


def test_pii_detector_offline_pass_knows_the_new_kinds() -> None:
    detector = PIIDetector(redaction_method="placeholder")
    text = "ip 10.0.0.7, iban GB82WEST12345698765432, call +44 20 7946 0958, see https://acme.io/x"
    verdict = detector.pattern_verdict(text)
    assert sorted(d.type for d in verdict.detections or ()) == ["iban", "ip-address", "phone", "url"]
    only_ips = PIIDetector(detection_types=["ip-address"]).pattern_verdict(text)
    assert [d.type for d in only_ips.detections or ()] == ["ip-address"]


def test_a_long_hex_token_streams_in_linear_time_without_a_cap() -> None:
    """Rules without a lead screen (IBAN, IPv6) are not searched again while all new text waits
    anyway: 20,000 characters of `abcd` in 4-character chunks took 7.8 s before, 0.05 s now."""
    f = RegexFilter(presets=["pii"], strategy="redact", stream_carryover_size=None)
    started = time.perf_counter()
    assert drive(f, ["abcd"] * 5_000) == "abcd" * 5_000
    assert time.perf_counter() - started < 2.0
