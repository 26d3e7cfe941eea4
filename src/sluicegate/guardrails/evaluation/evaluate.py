"""`evaluate`: a processor chain over a dataset, one text after another, into an `EvalReport`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sluicegate.errors import ConfigurationError, ProcessorError, SluicegateError
from sluicegate.guardrails.evaluation import metering
from sluicegate.guardrails.evaluation.chain import DEFAULT_CHUNK_CHARS, PHASES, Phase, run_chain
from sluicegate.guardrails.evaluation.dataset import Example
from sluicegate.guardrails.evaluation.labels import LabelMap
from sluicegate.guardrails.evaluation.pacing import Pacer
from sluicegate.guardrails.evaluation.scores import EvalReport, score_spans, score_verdict
from sluicegate.request_context import RequestContext


class EvaluationError(SluicegateError):
    """A processor failed (an error, not a tripwire) on a dataset line; the message names it."""


async def evaluate(
    processors: Sequence[Any],
    examples: Sequence[Example],
    *,
    phase: Phase = "input",
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    labels: LabelMap | None = None,
    progress: Callable[[int, int], None] | None = None,
    share_loop: bool = True,
) -> EvalReport:
    """Run `processors` in `phase` over each example and score the results. `progress(done,
    total)` is called after each one. A processor that fails (not a tripwire: an error) stops
    the evaluation with an `EvaluationError` naming the line, rather than scoring a crash as a pass.
    With `share_loop` the event loop gets a pause every few milliseconds of work (`pacing`), so a
    server evaluating still answers other requests; without (a command alone on its loop), only a
    bare turn, which costs nothing. Either way, cancelling the evaluation stops it there."""
    if phase not in PHASES:
        raise ConfigurationError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    if not isinstance(chunk_chars, int) or isinstance(chunk_chars, bool) or chunk_chars < 1:
        raise ConfigurationError(f"chunk_chars must be a positive integer, got {chunk_chars!r}")
    if not processors:
        raise ConfigurationError(f"no {phase} processors to evaluate")
    labels = labels or LabelMap()
    metering.install(processors)
    report = EvalReport(examples=len(examples), phase=phase)
    pacer = Pacer() if share_loop else Pacer(pause=0.0)
    with metering.metering() as meter:
        for done, example in enumerate(examples, 1):
            await pacer.turn()
            try:
                outcome = await run_chain(
                    processors,
                    example.text,
                    phase=phase,
                    chunk_chars=chunk_chars,
                    request_context=RequestContext(),
                    pacer=pacer,
                )
            except ProcessorError as exc:
                raise EvaluationError(f"line {example.line}: {exc}") from exc
            report.latencies.append(outcome.seconds)
            report.blocked += outcome.blocked
            if example.spans is not None:
                score_spans(report, example, outcome.output, labels, blocked=outcome.blocked)
            if example.expected is not None:
                blocked = outcome.blocked or (bool(example.text.strip()) and not outcome.output.strip())
                score_verdict(report, example, blocked=blocked)
            if progress is not None:
                progress(done, len(examples))
    report.detector_calls = meter.calls
    report.input_tokens = meter.input_tokens
    report.output_tokens = meter.output_tokens
    report.cost = meter.cost
    report.unpriced_models = sorted(meter.unpriced)
    return report
