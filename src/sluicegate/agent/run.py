"""`AgentRun`: one `generate`/`stream` call, as an async generator of chunks.

`AgentRun` is a `RunCore` (`run_core`: the run's wiring, its results as `Agent` and `ModelOutput`
read them, the chunk plumbing) whose progress is one `RunState` (`run_state`, `run.state`), plus
`events()`, the entry to its loop:

- `run_loop`: start -> `process_input` -> steps -> `process_output_result` -> finish, and the
  tripwire / error endings;
- `model_step`: one step's model call (prompt, the provider stream chunk by chunk: the hot
  path, recovery of a failed call), its output-step checks and its tools;
- `model_parts`: model stream parts (and a replayed response's chunks) -> chunks;
- `tool_phase`: the step's tool calls, run concurrently; one call about to run;
- `call_options`: a step's `StepConfig` -> the provider's `CallOptions`;
- `step_retry`: retries processors ask for: the cap, and the feedback the next attempt sees.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from sluicegate.agent.abort import abortable
from sluicegate.agent.call_options import normalize_tool_choice
from sluicegate.agent.observe import LogTap, logged
from sluicegate.agent.run_core import DEFAULT_MAX_STEPS, RunCore, RunOptions
from sluicegate.agent.run_loop import Resumption, run_loop
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.run_log import RunLog

__all__ = ["DEFAULT_MAX_STEPS", "AgentRun", "RunOptions", "normalize_tool_choice"]


class AgentRun(RunCore):
    """One agent call: its wiring, its `state`, and the loop (`events()`) that drives it."""

    resumption: Resumption | None = None
    """Set on a run that continues a suspended one: its held step and the decision."""

    run_log: RunLog | None = None
    """Where the run's chunks are kept for `Agent.observe` (None: nowhere)."""

    def events(self) -> AsyncGenerator[Chunk, None]:
        """The run's chunks; with an `abort_signal`, a run that setting it cancels; with a
        `run_log`, each chunk also goes to the log, as the consumer gets it."""
        signal = self.options.abort_signal
        if signal is None:
            # The loop writes the log itself: no generator layer per chunk for it.
            tap = None if self.run_log is None else LogTap(self, self.run_log)
            return run_loop(self, self.resumption, tap)
        loop = run_loop(self, self.resumption)
        loop = abortable(loop, signal, self._on_abort, lambda: not self.state.finishing)
        if self.run_log is not None:
            loop = logged(self, loop, self.run_log)
        return loop

    async def give_back_claim(self) -> None:
        """A resumed run stopped before acting on its decision (its stream closed unread): the
        stored run is claimable again, unchanged. Nothing happens once the decision ran."""
        claimed = self.claimed
        if claimed is None or self.state.decided or self.suspended_runs is None:
            return
        self.claimed = None
        await self.suspended_runs().release_suspended_run(claimed.run_id, version=claimed.version)

    def _on_abort(self) -> Chunk:
        """The run was cancelled by its abort signal: record it, and the chunk that ends the stream."""
        self.state.aborted = True
        self.state.finish_reason = "abort"
        return self.chunk("abort")
