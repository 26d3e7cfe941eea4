"""`RunState`: everything about one run that changes as it progresses.

`RunCore` (the base of `AgentRun`) holds the run's wiring (model, tools, options, processor
runner, trace, stream pipeline), set up for the run and not moved by its progress; this holds
the progress; `suspension.RunSnapshot` is what of it is stored (as JSON) at a step boundary and
read back into a fresh run. Not all of it belongs in that snapshot:

- stored: `steps`, `usage`, `finish_reason`, `tripwire`, `error`, `object`, `aborted`,
  `accepted_text`, `system_base`, `feedback`, `step_number`, `completed`, `output_attempts`.
  Beside them a snapshot needs the conversation (the `MessageList`, with its thread and
  resource), the request context, and what lives on the `ProcessorRunner` because processors
  read it there: the retry count and each processor's `state`.
- derivable: `object_ready`, whether `object` was already parsed from the final step (false in
  any run that has not reached its end).
- human in the loop: `held`, the step waiting on people once the run suspended (stored as the
  snapshot's held step, see `suspension`); `approved` and `resume_data`, what the resuming
  call decided (a resumed run holds them for its one decided call); `decided`, whether that
  decision was acted on (before it, a closed stream gives its claim back).
- ephemeral (meaningful only inside the process running the step): `current`, the step being
  recorded, whose text counts while it streams; `input_gate`, the pending result of the
  parallel input guards; `finishing`, set while `process_output_result` runs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sluicegate.agent.results import StepResult, Tripwire
from sluicegate.agent.step import StepRecorder
from sluicegate.stream.usage import Usage

if TYPE_CHECKING:
    from sluicegate.agent.held_step import HeldStep

SystemMessages = list[tuple[dict[str, Any], str | None]]
"""System messages with their tags, as `MessageList.system_snapshot()` gives them."""


@dataclass(slots=True, eq=False)
class RunState:
    """The progress of one run (see the module docstring for what a snapshot would keep)."""

    steps: list[StepResult] = field(default_factory=list)
    """Every step so far, retried ones (finish reason `retry`) included."""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    tripwire: Tripwire | None = None
    error: BaseException | None = None
    object: Any = None
    """The structured output, once parsed."""
    aborted: bool = False
    accepted_text: list[str] = field(default_factory=list)
    """Each accepted step's text, in order: the run's text is their concatenation (a resumed
    run's too: what was written before the suspension is part of its answer)."""
    streamed_from: int = 0
    """How many of `accepted_text` a resumed stream did not stream itself (the text before the
    suspension, the held step's included): a `ModelOutput`'s `text` starts after them."""
    system_base: SystemMessages = field(default_factory=list)
    """The system messages after `process_input`: each step starts again from them."""
    feedback: SystemMessages = field(default_factory=list)
    """Why earlier attempts were rejected, added after each later step's system messages."""
    step_number: int = 0
    """The number of the next step (retried attempts count)."""
    completed: int = 0
    """Steps that ended without a retry: what `max_steps` limits."""
    steps_exhausted: bool = False
    """The run ended at `max_steps` while the model still wanted tools (see `run_loop`)."""
    output_attempts: int = 0
    """Structured-output answers that failed validation."""
    object_ready: bool = False
    current: StepRecorder | None = None
    input_gate: asyncio.Future[Any] | None = None
    finishing: bool = False
    held: HeldStep | None = None
    approved: set[str] = field(default_factory=set)
    resume_data: dict[str, Any] = field(default_factory=dict)
    suspended_with: dict[str, Any] = field(default_factory=dict)
    """The payload a resumed call suspended with, by call id (`ToolContext.suspended_with`)."""
    decided: bool = False
