"""Adjacent windowed guardrails of an output chain judge the stream together.

Chained one after another, each guardrail that holds text until a verdict covers it would see
text only once the one before released it: three judges, three judge latencies. Instead the
runner links each run of adjacent guardrails that judge windows (`judges_windows()`, see
`guardrails.windowed_guard`) into one panel: every member judges the model's text
as it comes, concurrently, and text is released once every member vetted it, with their
redactions composed by span. Nothing is done for chains without two such neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _judges_windows(processor: Any) -> bool:
    check = getattr(processor, "judges_windows", None)
    return callable(check) and check() is True


def link_judge_panels(chain: Sequence[tuple[Any, Any]]) -> None:
    """Link each run of two or more adjacent windowed guardrails of `chain` (output stream
    processors with their per-request stream hook arguments) into one panel. A processor met
    twice (one `state` for both places) starts a new run."""
    runs: list[list[tuple[Any, Any]]] = [[]]
    for processor, args in chain:
        run = runs[-1]
        if not _judges_windows(processor):
            if run:
                runs.append([])
            continue
        if any(other.state is args.state for _, other in run):
            runs.append([])
        runs[-1].append((processor, args))
    panels = [run for run in runs if len(run) > 1]
    if not panels:
        return
    from sluicegate.guardrails.windowed_guard import form_panel

    for run in panels:
        form_panel(run)
