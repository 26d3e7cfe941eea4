"""Retries a processor asks for (`TripWire(retry=True)`, an error processor's `retry`): how
many a run allows, and the feedback the next attempt sees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sluicegate.agent.run_core import RunCore
    from sluicegate.agent.run_state import RunState

DEFAULT_RETRY_CAP = 10
FEEDBACK = (
    "[Processor Feedback] Your previous response was not accepted: {reason}. "
    "Please try again with the feedback in mind."
)


def step_retry_cap(run: RunCore) -> int | None:
    """How many retries processors may ask for: `max_processor_retries`, else the default cap when
    error processors are configured; None: a retry request ends the run as a tripwire."""
    if run.options.max_processor_retries is not None:
        return run.options.max_processor_retries
    return DEFAULT_RETRY_CAP if run.runner.has_error_processors else None


def can_retry(run: RunCore, cap: int | None) -> bool:
    return cap is not None and run.runner.retry_count < cap


def add_feedback(state: RunState, reason: str) -> None:
    # Applied after the step's own system messages (see `run_loop._prepare_step`), as Mastra orders them.
    state.feedback.append(({"role": "system", "content": FEEDBACK.format(reason=reason)}, None))
