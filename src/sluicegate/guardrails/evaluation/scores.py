"""Scoring what a chain did to each text against the gold spans and verdicts.

Per label (see `labels`), over the whole dataset:

- a gold span is *caught* when redacted regions cover at least half of its characters;
  recall = caught / gold spans;
- a redacted region is *correct* when it overlaps a gold span of its label (a region that names
  no kind, a mask or a hash, takes the label of the gold span it overlaps most, else
  `UNLABELLED`); precision = correct / regions;
- *leak*: a gold value of 6 or more characters leaks when one of its own 6-character substrings
  survives in the output (compared NFKC, without format characters, case folded), counting
  only occurrences the rest of the text does not explain; leak rate = leaked / such values;
- *over-redaction*: characters removed outside every gold span, per region label and in total
  (with its rate over all non-PII characters).

A blocked text counts as everything removed. Verdict examples (`expected`) score accuracy and
the confusion of `block` (a tripwire, or nothing got through) against `pass`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sluicegate.guardrails.evaluation.alignment import Region, canonical, changed_regions
from sluicegate.guardrails.evaluation.dataset import Example, GoldSpan
from sluicegate.guardrails.evaluation.labels import LabelMap, without_placeholders

LEAK_GRAM = 6
CAUGHT_SHARE = 0.5
UNLABELLED = "UNLABELLED"


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class KindScore:
    label: str
    gold: int = 0
    caught: int = 0
    predicted: int = 0
    correct: int = 0
    leak_checked: int = 0
    leaked: int = 0
    over_redacted_chars: int = 0

    @property
    def precision(self) -> float | None:
        return _ratio(self.correct, self.predicted)

    @property
    def recall(self) -> float | None:
        return _ratio(self.caught, self.gold)

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None:
            return None
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)

    @property
    def leak_rate(self) -> float | None:
        return _ratio(self.leaked, self.leak_checked)

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "leak_rate": self.leak_rate,
        }


@dataclass
class VerdictScore:
    true_block: int = 0
    false_block: int = 0
    true_pass: int = 0
    false_pass: int = 0

    @property
    def total(self) -> int:
        return self.true_block + self.false_block + self.true_pass + self.false_pass

    @property
    def accuracy(self) -> float | None:
        return _ratio(self.true_block + self.true_pass, self.total)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "accuracy": self.accuracy}


def percentile(values: Sequence[float], share: float) -> float | None:
    """Nearest-rank percentile (`share` in 0..1) of `values`."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


@dataclass
class EvalReport:
    examples: int
    phase: str
    kinds: dict[str, KindScore] = field(default_factory=dict)
    verdicts: VerdictScore | None = None
    over_redacted_chars: int = 0
    non_pii_chars: int = 0
    latencies: list[float] = field(default_factory=list)
    detector_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    unpriced_models: list[str] = field(default_factory=list)
    blocked: int = 0

    @property
    def over_redaction_rate(self) -> float | None:
        return _ratio(self.over_redacted_chars, self.non_pii_chars)

    def kind(self, label: str) -> KindScore:
        score = self.kinds.get(label)
        if score is None:
            score = self.kinds[label] = KindScore(label)
        return score

    def totals(self) -> KindScore:
        """All labels together (micro-averaged)."""
        total = KindScore("ALL")
        for score in self.kinds.values():
            for name in ("gold", "caught", "predicted", "correct", "leak_checked", "leaked"):
                setattr(total, name, getattr(total, name) + getattr(score, name))
            total.over_redacted_chars += score.over_redacted_chars
        return total

    def to_dict(self) -> dict[str, Any]:
        return {
            "examples": self.examples,
            "phase": self.phase,
            "blocked": self.blocked,
            "kinds": {label: score.to_dict() for label, score in sorted(self.kinds.items())},
            "all": self.totals().to_dict() if self.kinds else None,
            "verdicts": self.verdicts.to_dict() if self.verdicts is not None else None,
            "over_redaction": {
                "chars": self.over_redacted_chars,
                "non_pii_chars": self.non_pii_chars,
                "rate": self.over_redaction_rate,
            },
            "latency_ms": {
                "p50": _ms(percentile(self.latencies, 0.5)),
                "p99": _ms(percentile(self.latencies, 0.99)),
                "mean": _ms(sum(self.latencies) / len(self.latencies)) if self.latencies else None,
            },
            "detector": {
                "calls": self.detector_calls,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost_usd": self.cost,
                "unpriced_models": self.unpriced_models,
            },
        }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def _overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


def _grams(value: str) -> Iterable[str]:
    return (value[i : i + LEAK_GRAM] for i in range(len(value) - LEAK_GRAM + 1))


def leaks(text: str, start: int, end: int, output: str) -> bool | None:
    """Whether the value `text[start:end]` leaks into `output`: one of its 6-grams occurs there
    more often than in the rest of `text` (so a name that also appears unredacted elsewhere
    leaks as that other value, not as this one). None: shorter than 6 characters."""
    value = canonical(text[start:end])
    if len(value) < LEAK_GRAM:
        return None
    seen = canonical(output)
    rest = canonical(text[:start]) + "\x00" + canonical(text[end:])
    return any(seen.count(gram) > rest.count(gram) for gram in set(_grams(value)))


def score_spans(
    report: EvalReport, example: Example, output: str, labels: LabelMap, *, blocked: bool
) -> None:
    """Add one span-labelled example, whose chain output was `output`, to `report`."""
    assert example.spans is not None
    text = example.text
    gold = [GoldSpan(s.start, s.end, labels.label(s.label)) for s in example.spans]
    regions: list[Region] = [Region(0, len(text), "")] if blocked and text else changed_regions(text, output)
    in_gold = bytearray(len(text))
    for span in gold:
        in_gold[span.start : span.end] = b"\x01" * (span.end - span.start)
    removed = bytearray(len(text))
    for region in regions:
        removed[region.start : region.end] = b"\x01" * (region.end - region.start)
    report.non_pii_chars += len(text) - sum(in_gold)

    for region in regions:
        label = labels.of_replacement(region.replacement)
        if label is None:
            best = max(gold, key=lambda g: _overlap(region.start, region.end, g.start, g.end), default=None)
            fits = best is not None and _overlap(region.start, region.end, best.start, best.end) > 0
            label = best.label if best is not None and fits else UNLABELLED
        score = report.kind(label)
        score.predicted += 1
        if any(g.label == label and _overlap(region.start, region.end, g.start, g.end) for g in gold):
            score.correct += 1
        outside = sum(1 for i in range(region.start, region.end) if not in_gold[i])
        score.over_redacted_chars += outside
        report.over_redacted_chars += outside

    shown = without_placeholders(text, output, labels)
    for span in gold:
        score = report.kind(span.label)
        score.gold += 1
        covered = sum(removed[span.start : span.end])
        if covered >= CAUGHT_SHARE * (span.end - span.start):
            score.caught += 1
        leaked = leaks(text, span.start, span.end, shown)
        if leaked is not None:
            score.leak_checked += 1
            score.leaked += leaked


def score_verdict(report: EvalReport, example: Example, *, blocked: bool) -> None:
    assert example.expected is not None
    if report.verdicts is None:
        report.verdicts = VerdictScore()
    verdicts = report.verdicts
    if example.expected == "block":
        if blocked:
            verdicts.true_block += 1
        else:
            verdicts.false_pass += 1
    elif blocked:
        verdicts.false_block += 1
    else:
        verdicts.true_pass += 1
