"""The offline `PIIDetector`'s quality on a generated dataset (issues 22 and 31, "How good"):
every structured kind leaks at most 2 % with precision at least 0.95; zero-width, fullwidth,
spaced and dashed variants leak at most 5 %, as do spaced `@`/`.` emails, look-alike letters and
cards and phones with dots, slashes, no-break and thin spaces; spelled-out `at`/`dot` emails at
most 20 %; values side by side in rows, tables and logs never; clean text has no false positive.

Redactions are placeholders, so a false positive counts against the kind it was taken for. The
dataset comes from `benchmarks/pii_quality.py` (presidio-evaluator's sentence faker and its
templates, Faker's prose, code and log lines; seed 42), small enough for CI. Kinds that miss a
target would be strict xfails (`MISSES`), so fixing them fails here until the mark goes.
"""

from __future__ import annotations

import asyncio

import pytest
from benchmarks.pii_quality import (
    EVASION_TARGET,
    LEAK_TARGET,
    PRECISION_TARGET,
    ROUND_TWO,
    SPELLED_TARGET,
    STRUCTURED,
    clean_examples,
    evasion_examples,
    faker_sentences,
    layout_examples,
)

from sluicegate.guardrails.evaluation import EvalReport, Example, evaluate
from sluicegate.processors import PIIDetector

SEED = 42
SENTENCES = 300

MISSES: dict[tuple[str, str], str] = {}
"""(test kind, label) pairs that miss their target today, each with its cause: strict xfails."""


@pytest.fixture(scope="module")
def sentences() -> list[Example]:
    return faker_sentences(SENTENCES, SEED, structured_only=True)


def _run(examples: list[Example]) -> EvalReport:
    return asyncio.run(evaluate([PIIDetector(redaction_method="placeholder")], examples))


@pytest.fixture(scope="module")
def main_report(sentences: list[Example]) -> EvalReport:
    return _run(sentences + clean_examples(SENTENCES, SEED))


@pytest.fixture(scope="module")
def evasions(sentences: list[Example]) -> dict[str, EvalReport]:
    kinds = ("zero-width", "fullwidth", "spaced", "dashed", "spelled", *ROUND_TWO)
    return {kind: _run(evasion_examples(sentences, kind, SEED)) for kind in kinds}


def _known_miss(kind: str, label: str) -> list[pytest.MarkDecorator]:
    reason = MISSES.get((kind, label))
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.mark.parametrize("label", [pytest.param(k, marks=_known_miss("leak", k)) for k in STRUCTURED])
def test_structured_kinds_leak_at_most_2_percent(main_report: EvalReport, label: str) -> None:
    score = main_report.kinds[label]
    assert score.leak_checked >= 10, f"too few {label} values generated to judge"
    assert score.leak_rate is not None and score.leak_rate <= LEAK_TARGET


@pytest.mark.parametrize("label", [pytest.param(k, marks=_known_miss("precision", k)) for k in STRUCTURED])
def test_structured_kinds_have_precision_at_least_095(main_report: EvalReport, label: str) -> None:
    score = main_report.kinds[label]
    assert score.predicted >= 10 and score.precision is not None and score.precision >= PRECISION_TARGET


def test_clean_prose_code_and_logs_are_left_almost_whole(main_report: EvalReport) -> None:
    assert main_report.over_redaction_rate is not None and main_report.over_redaction_rate <= 0.001


def test_clean_prose_code_and_logs_have_no_false_positive() -> None:
    clean = _run(clean_examples(SENTENCES, SEED))
    assert sum(score.predicted for score in clean.kinds.values()) == 0


def _leaked(value: str, output: str) -> bool:
    return any(value[i : i + 6] in output for i in range(len(value) - 5))


def test_values_side_by_side_leak_nothing_their_sentences_do_not(sentences: list[Example]) -> None:
    """Issue 31: the sentences' values, two to five at a time, in rows, CSV, TSV, JSON,
    Markdown tables, lists and log lines, leak no value that its own sentence does not (the few
    that leak there: thousands-grouped 8- and 9-digit numbers, read as counts)."""
    detector = PIIDetector(redaction_method="placeholder")

    def redact(text: str) -> str:
        verdict = detector.pattern_verdict(text)
        return detector.redact(text, verdict) or "" if verdict.detections else text

    in_sentences = {
        example.text[g.start : g.end]
        for example in sentences
        for g in example.spans or ()
        if g.label in STRUCTURED and _leaked(example.text[g.start : g.end], redact(example.text))
    }
    checked = 0
    for example in layout_examples(sentences, SEED):
        out = redact(example.text)
        for g in example.spans or ():
            value = example.text[g.start : g.end]
            checked += 1
            assert not _leaked(value, out) or value in in_sentences, (value, out)
    assert checked >= 300


_EVASION_CASES = [
    pytest.param(kind, label, marks=_known_miss(kind, label), id=f"{kind}-{label}")
    for kind in ("zero-width", "fullwidth", "spaced", "dashed")
    for label in STRUCTURED
    # Spacing and dashing rewrite digits: only the digit-led kinds have spaced and dashed variants.
    if kind in ("zero-width", "fullwidth") or label in ("PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE")
]


_EVASION_CASES += [
    pytest.param(kind, label, id=f"{kind}-{label}")
    for kind, labels in (
        ("spaced-at", ("EMAIL_ADDRESS",)),
        ("confusable", ("EMAIL_ADDRESS",)),
        ("separators", ("PHONE_NUMBER", "CREDIT_CARD")),
    )
    for label in labels
]


@pytest.mark.parametrize(("kind", "label"), _EVASION_CASES)
def test_evasion_variants_leak_at_most_5_percent(
    evasions: dict[str, EvalReport], kind: str, label: str
) -> None:
    score = evasions[kind].kinds[label]
    assert score.leak_rate is not None and score.leak_rate <= EVASION_TARGET


def test_spelled_out_emails_leak_at_most_20_percent(evasions: dict[str, EvalReport]) -> None:
    score = evasions["spelled"].kinds["EMAIL_ADDRESS"]
    assert score.leak_checked >= 10 and score.leak_rate is not None and score.leak_rate <= SPELLED_TARGET
