"""Measuring a processor chain on a labelled dataset (`sluicegate eval`): how much PII it
catches and leaks, how much else it removes, how fast, and at what detector cost.

`read_dataset` reads the JSONL, `evaluate` runs the chain over it, `render` writes the report.
"""

from __future__ import annotations

from sluicegate.guardrails.evaluation.dataset import DatasetError, Example, GoldSpan, read_dataset
from sluicegate.guardrails.evaluation.evaluate import EvaluationError, evaluate
from sluicegate.guardrails.evaluation.labels import DEFAULT_LABELS, LabelMap
from sluicegate.guardrails.evaluation.render import render
from sluicegate.guardrails.evaluation.scores import EvalReport, KindScore, VerdictScore

__all__ = [
    "DEFAULT_LABELS",
    "DatasetError",
    "EvalReport",
    "EvaluationError",
    "Example",
    "GoldSpan",
    "KindScore",
    "LabelMap",
    "VerdictScore",
    "evaluate",
    "read_dataset",
    "render",
]
