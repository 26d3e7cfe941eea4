"""What counts as a redaction, a catch, a leak and over-redaction, and the reports of them."""

from __future__ import annotations

import json
import re

import pytest

from sluicegate.guardrails.evaluation import EvalReport, Example, GoldSpan, LabelMap, render
from sluicegate.guardrails.evaluation.alignment import Region, changed_regions
from sluicegate.guardrails.evaluation.scores import leaks, percentile, score_spans, score_verdict


def test_a_mask_is_one_region_but_two_placeholders_stay_two() -> None:
    text = "card 4111 1111 1111 1234 and ssn 123-45-6789."
    masked = "card **** **** **** 1234 and ssn ***-**-6789."
    assert changed_regions(text, masked) == [Region(5, 19, "**** **** ****"), Region(33, 39, "***-**")]
    assert changed_regions("a x@y.io 555-123-4567 z", "a [EMAIL] [PHONE] z") == [
        Region(2, 8, "[EMAIL]"),
        Region(9, 21, "[PHONE]"),
    ]


def test_normalising_is_not_redacting() -> None:
    assert changed_regions("mail ｊｏｅ@ｘ.ｉｏ now", "mail joe@x.io now") == []
    assert changed_regions("a\u200bb\u200bc", "abc") == []


def test_placeholders_map_to_gold_labels() -> None:
    labels = LabelMap({"employee-id": "ID"})
    assert labels.of_replacement("[EMAIL]") == "EMAIL_ADDRESS"
    assert labels.of_replacement("[CREDIT-CARD]") == labels.of_replacement("[CREDIT_CARD]") == "CREDIT_CARD"
    assert labels.of_replacement("<PHONE_2>") == "PHONE_NUMBER"
    assert labels.of_replacement("[EMPLOYEE_ID]") == "ID"
    assert labels.label("GPE") == labels.label("STREET_ADDRESS") == "LOCATION"
    for nothing in ("j****e@****.com", "[HASH:1a2b3c4d]", "[REDACTED]", "", "[EMAIL] [PHONE]"):
        assert labels.of_replacement(nothing) is None


def test_a_leak_is_a_surviving_6_gram_not_explained_by_the_rest_of_the_text() -> None:
    text = "Marija wrote from marija.k@mail.com"
    start = text.index("marija.k")
    # the email is masked; "Marija" survives only where the rest of the text has it
    assert leaks(text, start, len(text), "Marija wrote from ******.k@****.com") is False
    assert leaks(text, start, len(text), "Marija wrote from marija.k@****.com") is True
    assert leaks(text, 0, 6, "[PERSON] wrote") is False
    assert leaks("id 12345", 3, 8, "id 12345") is None  # shorter than 6: not checked
    zero_width = "key a\u200bb\u200bc\u200bd\u200be\u200bf"
    assert leaks(zero_width, 4, len(zero_width), "key abcdef") is True  # the evasion, normalised


def test_a_placeholder_the_chain_wrote_is_not_a_value_leaking() -> None:
    """`[CREDIT-CARD]` beside `http://www.CreditSplash.se/` once counted the URL as leaked (its
    "credit" 6-gram appeared more often in the output); a bracketed word the text already
    held, or a value left in place, still counts."""
    text = "| credit | 6011278822263873 |\n| url | http://www.CreditSplash.se/ |\n"
    url = text.index("http")
    report = EvalReport(examples=1, phase="input")
    output = "| credit | [CREDIT-CARD] |\n| url | [URL] |\n"
    gold = _example(text, ("http://www.CreditSplash.se/", "URL"))
    score_spans(report, gold, output, LabelMap(), blocked=False)
    assert report.kinds["URL"].leaked == 0
    assert leaks(text, url, url + 27, output) is True  # the raw comparison reads "credit" twice
    held = "say [Credit] to http://www.CreditSplash.se/"
    report = EvalReport(examples=1, phase="input")
    gold = _example(held, ("http://www.CreditSplash.se/", "URL"))
    score_spans(report, gold, held, LabelMap(), blocked=False)
    assert report.kinds["URL"].leaked == 1


def _example(text: str, *spans: tuple[str, str]) -> Example:
    gold = tuple(GoldSpan(text.index(v), text.index(v) + len(v), label) for v, label in spans)
    return Example(1, text, gold, None)


def test_recall_precision_leak_and_over_redaction() -> None:
    report = EvalReport(examples=2, phase="input")
    labels = LabelMap()
    one = _example("Mail joe.bloggs@example.com or call Ann.", ("joe.bloggs@example.com", "EMAIL_ADDRESS"),
                   ("Ann", "PERSON"))  # fmt: skip
    score_spans(report, one, "Mail [EMAIL] or [PHONE] Ann.", labels, blocked=False)
    two = _example("Version 1.2.3 ships 2024", ("2024", "DATE_TIME"))
    score_spans(report, two, "Version [EMAIL] ships 2024", labels, blocked=False)
    email = report.kinds["EMAIL_ADDRESS"]
    assert (email.gold, email.caught, email.predicted, email.correct) == (1, 1, 2, 1)
    assert email.precision == 0.5 and email.recall == 1.0 and email.f1 == pytest.approx(2 / 3)
    assert (email.leak_checked, email.leaked, email.leak_rate) == (1, 0, 0.0)
    phone = report.kinds["PHONE_NUMBER"]
    assert (phone.predicted, phone.correct, phone.over_redacted_chars) == (1, 0, len("call"))
    person = report.kinds["PERSON"]
    assert (person.gold, person.caught, person.leak_checked) == (1, 0, 0)
    assert report.over_redacted_chars == len("call") + len("1.2.3")
    assert report.non_pii_chars == len(one.text) - 22 - 3 + len(two.text) - 4
    totals = report.totals()
    assert (totals.gold, totals.caught, totals.predicted, totals.correct) == (3, 1, 3, 1)


def test_a_mask_takes_the_label_of_the_gold_it_covers_and_a_stray_one_is_unlabelled() -> None:
    report = EvalReport(examples=1, phase="output")
    example = _example("ssn 123-45-6789 on file", ("123-45-6789", "US_SSN"))
    score_spans(report, example, "ssn ***-**-6789 ** file", LabelMap(), blocked=False)
    assert (report.kinds["US_SSN"].correct, report.kinds["US_SSN"].caught) == (1, 1)
    assert report.kinds["UNLABELLED"].predicted == 1
    assert report.kinds["UNLABELLED"].over_redacted_chars == 2


def test_a_blocked_text_counts_as_all_removed_and_verdicts_score_a_confusion() -> None:
    report = EvalReport(examples=1, phase="input")
    score_spans(report, _example("call 555-123-4567", ("555-123-4567", "PHONE_NUMBER")), "", LabelMap(),
                blocked=True)  # fmt: skip
    assert report.kinds["PHONE_NUMBER"].caught == 1 and report.over_redacted_chars == len("call ")
    for expected, blocked in [
        ("block", True),
        ("block", False),
        ("pass", True),
        ("pass", False),
        ("pass", False),
    ]:
        score_verdict(report, Example(1, "t", None, expected), blocked=blocked)  # type: ignore[arg-type]
    verdicts = report.verdicts
    assert verdicts is not None
    assert (verdicts.true_block, verdicts.false_pass, verdicts.false_block, verdicts.true_pass) == (
        1,
        1,
        1,
        2,
    )
    assert verdicts.accuracy == 0.6


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0 and percentile(values, 0.99) == 99.0
    assert percentile([], 0.5) is None


def _report() -> EvalReport:
    report = EvalReport(examples=1, phase="input", latencies=[0.001, 0.003])
    example = _example(
        "write to a.person@example.org now", ("a.person@example.org", "EMAIL_ADDRESS"), ("now", "x</script>")
    )
    score_spans(report, example, example.text, LabelMap(), blocked=False)
    return report


def test_the_reports_show_the_scores_and_the_html_is_self_contained() -> None:
    report = _report()
    table = render(report, "table")
    assert re.search(r"EMAIL_ADDRESS\s+1\s+0\.000\s+0\s+-\s+-\s+1\.000 \(1/1\)", table)
    assert "latency per text: p50 1.000 ms, p99 3.000 ms" in table
    data = json.loads(render(report, "json"))
    assert data["kinds"]["EMAIL_ADDRESS"]["leak_rate"] == 1.0 and data["latency_ms"]["p99"] == 3.0
    page = render(report, "html")
    assert "<svg" in page and "100.0 %" in page and "EMAIL_ADDRESS" in page
    assert not re.search(r"(src|href)=", page)  # nothing fetched: opens offline
    embedded = page.split('id="report">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded) == data  # the data block survives a "</script>" in a label
    assert "X</SCRIPT>" not in page
    with pytest.raises(ValueError, match="format must be one of"):
        render(report, "xml")  # type: ignore[arg-type]
