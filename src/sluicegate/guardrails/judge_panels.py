"""The windowed guardrails of an output chain judge the stream together.

Chained one after another, each guardrail that holds text until a verdict covers it would see
text only once the one before released it: three judges, three judge latencies. Instead the
runner links each run of adjacent guardrails that judge windows (`judges_windows()`, see
`guardrails.windowed_guard`) into one panel: every member judges the model's text
as it comes, concurrently, and text is released once every member vetted it, with their
redactions composed by span.

Panels kept apart only by deterministic processors (`transforms_text()`, like `RegexFilter`)
are linked into one chain: the first panel runs those processors ahead of time on its input
(`guardrails.shadow`), so each later panel judges, at the same time as the first, the text it
will receive, and releases it once its input turns out to be that text
(`guardrails.speculative`). Any processor that is neither ends the chain. Nothing is done for
chains without two panels or a panel of two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Link = tuple[Any, Any]
"""(processor, its per-request stream hook arguments)."""


def _judges_windows(processor: Any) -> bool:
    check = getattr(processor, "judges_windows", None)
    return callable(check) and check() is True


def _chains(chain: Sequence[Link]) -> list[list[list[Link] | Link]]:
    """The runs of `chain` made of panels (lists of adjacent judges) and the deterministic
    processors between them, each run starting with a panel. A judge placed twice (one `state`
    for both places) judges on its own, in each place, and ends a run."""
    from sluicegate.guardrails.shadow import transforms_text

    placed: dict[int, int] = {}
    for _, args in chain:
        placed[id(args.state)] = placed.get(id(args.state), 0) + 1
    runs: list[list[list[Link] | Link]] = [[]]
    for processor, args in chain:
        run = runs[-1]
        if _judges_windows(processor) and placed[id(args.state)] == 1:
            if run and isinstance(run[-1], list):
                run[-1].append((processor, args))
            else:
                run.append([(processor, args)])
        elif transforms_text(processor) and run:
            run.append((processor, args))
        elif run:
            runs.append([])
    for run in runs:
        while run and not isinstance(run[-1], list):
            run.pop()
    return [run for run in runs if run]


def link_judge_panels(chain: Sequence[Link]) -> None:
    """Link the windowed guardrails of `chain` (output stream processors with their
    per-request stream hook arguments) into panels, and panels kept apart by deterministic
    processors into one chain judged at once."""
    if sum(1 for processor, _ in chain if _judges_windows(processor)) < 2:
        return
    from sluicegate.guardrails.shadow import Shadow, Stage
    from sluicegate.guardrails.speculative import SpeculativeStream
    from sluicegate.guardrails.windowed_guard import form_panel

    for run in _chains(chain):
        panels = [item for item in run if isinstance(item, list)]
        if len(panels) == 1:
            if len(panels[0]) > 1:
                form_panel(panels[0])
            continue
        head = form_panel(panels[0])
        legs: list[tuple[list[Stage], SpeculativeStream]] = []
        stages: list[Stage] = []
        for item in run[1:]:
            if isinstance(item, list):
                follower = form_panel(item, SpeculativeStream)
                assert isinstance(follower, SpeculativeStream)
                legs.append((stages, follower))
                stages = []
            else:
                stages.append(Stage(*item))
        head.shadow = Shadow(legs)
