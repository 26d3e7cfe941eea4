"""`SyncModelOutput`: what `Agent.stream_sync` returns.

The same run as `ModelOutput`, driven on sluicegate's background event loop: iterate
`full_stream` / `text_stream` / `object_stream` with a plain `for`, and read the results as
plain attributes (reading one finishes the run first).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from sluicegate.stream.chunk import Chunk

if TYPE_CHECKING:
    from sluicegate.agent.output import ModelOutput
    from sluicegate.agent.results import Response, StepResult, Tripwire
    from sluicegate.stream.kinds import ToolCallChunk, ToolErrorChunk, ToolResultChunk
    from sluicegate.stream.usage import Usage

Out = TypeVar("Out", default=Any)


class SyncModelOutput(Generic[Out]):
    """A streaming run for code that does not `await`."""

    def __init__(self, output: ModelOutput[Out]) -> None:
        self._output = output

    @property
    def run_id(self) -> str:
        return self._output.run_id

    @property
    def full_stream(self) -> Iterator[Chunk]:
        """Every chunk of the run, in order. May be iterated once."""
        from sluicegate.agent.sync_loop import iterate_sync

        return iterate_sync(self._output.full_stream)

    @property
    def text_stream(self) -> Iterator[str]:
        """The text of each `text-delta` chunk."""
        from sluicegate.agent.sync_loop import iterate_sync

        return iterate_sync(self._output.text_stream)

    @property
    def object_stream(self) -> Iterator[Any]:
        """Partial structured output as it is written (see `ModelOutput.object_stream`)."""
        from sluicegate.agent.sync_loop import iterate_sync

        return iterate_sync(self._output.object_stream)

    def _await(self, name: str) -> Any:
        from sluicegate.agent.sync_loop import run_sync

        async def read() -> Any:
            return await getattr(self._output, name)

        return run_sync(read())

    @property
    def text(self) -> str:
        value: str = self._await("text")
        return value

    @property
    def reasoning_text(self) -> str:
        value: str = self._await("reasoning_text")
        return value

    @property
    def finish_reason(self) -> str | None:
        value: str | None = self._await("finish_reason")
        return value

    @property
    def usage(self) -> Usage:
        value: Usage = self._await("usage")
        return value

    @property
    def total_usage(self) -> Usage:
        return self.usage

    @property
    def steps(self) -> list[StepResult]:
        value: list[StepResult] = self._await("steps")
        return value

    @property
    def tool_calls(self) -> list[ToolCallChunk]:
        value: list[ToolCallChunk] = self._await("tool_calls")
        return value

    @property
    def tool_results(self) -> list[ToolResultChunk]:
        value: list[ToolResultChunk] = self._await("tool_results")
        return value

    @property
    def tool_errors(self) -> list[ToolErrorChunk]:
        value: list[ToolErrorChunk] = self._await("tool_errors")
        return value

    @property
    def tripwire(self) -> Tripwire | None:
        value: Tripwire | None = self._await("tripwire")
        return value

    @property
    def steps_exhausted(self) -> bool:
        value: bool = self._await("steps_exhausted")
        return value

    @property
    def error(self) -> BaseException | None:
        value: BaseException | None = self._await("error")
        return value

    @property
    def response(self) -> Response:
        value: Response = self._await("response")
        return value

    @property
    def object(self) -> Out:
        """The validated structured output."""
        value: Out = self._await("object")
        return value

    def consume(self) -> None:
        """Drive the run to its end without reading the chunks."""
        from sluicegate.agent.sync_loop import run_sync

        run_sync(self._output.consume())
