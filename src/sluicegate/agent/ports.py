"""The ports of a run: what its loop reaches the world through, given to it where the run is
built (`Agent.prepare_run`), so the same loop runs in one process and in a Temporal workflow.

- calling a model, yielding parts: `ModelCaller` picks the step's model, a `LanguageModel`
  whose `do_stream` yields the parts (in one process `models.fallback.ModelChain` of provider
  models, whose streams the loop runs through the per-chunk pipeline; in a workflow
  `durable.temporal.workflow_model.DurableChain` of `ActivityModel`s, whose model activity
  runs the same pipeline, `agent.chunk_stream.stream_chunks`, and hands over its chunks);
- running a tool: `ToolRunner` (in one process `InProcessTools`, the tool's
  own `validate` and `execute`; in a workflow `durable.temporal.workflow.ActivityTools`, the
  tool activity);
- loading and saving a snapshot: `SnapshotStore` (`storage.suspended_runs.SuspendedRunStore`;
  in a workflow an in-memory store: the waiting workflow keeps the run);
- ids: `IdSource` (`sluicegate.ids`: `uuid.uuid4`, or `workflow.uuid4` installed for the
  workflow's context only, so a replay makes the same ids);
- time: `TimeSource` (`sluicegate.clock`: the system clock, or `workflow.time_ns` installed for
  the workflow's context only, so a replay stamps parts, messages and a step's `started_at`
  with the same times).

The ports are structural (`typing.Protocol`): mypy checks each implementation where it is
handed to the run, and nothing below the agent layer imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sluicegate.clock import TimeSource
from sluicegate.ids import IdSource

if TYPE_CHECKING:
    from sluicegate.models.base import LanguageModel
    from sluicegate.storage.suspended_runs import SuspendedRunStore as SnapshotStore
    from sluicegate.tools import Tool, ToolContext

__all__ = ["IdSource", "InProcessTools", "ModelCaller", "SnapshotStore", "TimeSource", "ToolRunner"]


def __getattr__(name: str) -> Any:
    """`SnapshotStore`, loaded on first use: a run that never waits never loads storage."""
    if name == "SnapshotStore":
        from sluicegate.storage.suspended_runs import SuspendedRunStore

        return SuspendedRunStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@runtime_checkable
class ModelCaller(Protocol):
    """Calling a model for one step: the run's models in order, the one serving it now
    (`current`), and what a call does beyond streaming the model's parts."""

    @property
    def processes_stream(self) -> bool:
        """Whether a call ran the output stream processors on the model's chunks itself (the
        loop does not run them again)."""
        ...

    @property
    def publishes_live(self) -> bool:
        """Whether a call writes its chunks to the run's log as they stream (the step's start
        is then handed to it: `announce_on_open`)."""
        ...

    @property
    def current(self) -> LanguageModel: ...

    @property
    def max_retries(self) -> int:
        """How often a call to `current` is retried by the client before the next model."""
        ...

    @property
    def is_last(self) -> bool: ...

    async def pick(self) -> LanguageModel:
        """The model to call now."""
        ...

    def advance(self) -> bool:
        """Move to the next model; False when there is none."""
        ...

    async def record(self, model: LanguageModel, error: BaseException | None) -> None:
        """A call's outcome (None: it succeeded)."""
        ...

    def announce_on_open(self, chunks: list[Any]) -> None:
        """The step's opening chunks, for the next call to publish once its stream opened."""
        ...

    def with_chosen(self, model: LanguageModel, max_retries: int) -> ModelCaller:
        """The step's caller when a processor chose its model."""
        ...


class ToolRunner(Protocol):
    """Running a tool the model called: its arguments checked first (a bad call fails before
    anything runs), then the call, whose `context` carries its writer, resume data and
    suspension."""

    def validate(self, tool: Tool, args: Any) -> Any:
        """What `execute` is given for `args` (`ToolInputError` when they do not fit)."""
        ...

    async def execute(self, tool: Tool, args: Any, context: ToolContext) -> Any: ...


class InProcessTools:
    """Tools run in this process: the tool's own `validate` and `execute`."""

    __slots__ = ()

    def validate(self, tool: Tool, args: Any) -> Any:
        return tool.validate(args)

    async def execute(self, tool: Tool, args: Any, context: ToolContext) -> Any:
        return await tool.execute(args, context)


IN_PROCESS_TOOLS: ToolRunner = InProcessTools()
"""The default `ToolRunner` of a run (it keeps no state: one serves every run)."""
