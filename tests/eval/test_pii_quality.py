"""The offline `PIIDetector`'s quality on a generated dataset (issue 22's "How good"): every
structured kind leaks at most 2 % with precision at least 0.95; zero-width, fullwidth, spaced
and dashed variants leak at most 5 %, spelled-out `at`/`dot` emails at most 20 %.

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
    SPELLED_TARGET,
    STRUCTURED,
    clean_examples,
    evasion_examples,
    faker_sentences,
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
    kinds = ("zero-width", "fullwidth", "spaced", "dashed", "spelled")
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


_EVASION_CASES = [
    pytest.param(kind, label, marks=_known_miss(kind, label), id=f"{kind}-{label}")
    for kind in ("zero-width", "fullwidth", "spaced", "dashed")
    for label in STRUCTURED
    # Spacing and dashing rewrite digits: only the digit-led kinds have spaced and dashed variants.
    if kind in ("zero-width", "fullwidth") or label in ("PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE")
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
