"""`AgentRun`: one `generate`/`stream` call, as an async generator of chunks.

`AgentRun` is the run's wiring (model, tools, options, processor runner, trace, stream pipeline),
its results as `Agent` and `ModelOutput` read them, and the chunk plumbing the loop modules
share. What changes as the run progresses is one `RunState` (`run.state`). The loop itself:

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

import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from sluicegate.agent.abort import abortable
from sluicegate.agent.call_options import normalize_tool_choice
from sluicegate.agent.results import Response, StepResult, Tripwire
from sluicegate.agent.run_loop import run_loop
from sluicegate.agent.run_state import RunState
from sluicegate.agent.structured import DEFAULT_OUTPUT_RETRIES, OutputSchema, output_schema
from sluicegate.messages import MessageList
from sluicegate.messages.convert import to_ui_messages
from sluicegate.models.base import LanguageModel
from sluicegate.models.retries import DEFAULT_MAX_RETRIES
from sluicegate.processors.hook_timeout import DEFAULT_PROCESSOR_TIMEOUT
from sluicegate.processors.runner import ProcessorRunner
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage
from sluicegate.tools import Tool
from sluicegate.tracing.run_start import begin_run

__all__ = ["DEFAULT_MAX_STEPS", "AgentRun", "RunOptions", "normalize_tool_choice"]

DEFAULT_MAX_STEPS = 5


@dataclass
class RunOptions:
    max_steps: int = DEFAULT_MAX_STEPS
    max_processor_retries: int | None = None
    tool_choice: Any = None
    active_tools: list[str] | None = None
    model_settings: dict[str, Any] | None = None
    provider_options: dict[str, Any] | None = None
    structured_output: Any = None
    processor_timeout: float | None = DEFAULT_PROCESSOR_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    abort_signal: Any = None
    output_retries: int = DEFAULT_OUTPUT_RETRIES


class AgentRun:
    """One agent call: its wiring, its `state`, and the loop (`events()`) that drives it."""

    def __init__(
        self,
        *,
        agent_id: str,
        model: LanguageModel,
        message_list: MessageList,
        tools: dict[str, Tool],
        input_processors: list[Any],
        output_processors: list[Any],
        error_processors: list[Any],
        request_context: RequestContext,
        options: RunOptions,
        prepare_step: Any = None,
    ) -> None:
        self.agent_id = agent_id
        self.run_id, self.trace_id, self.trace = begin_run(agent_id, str(uuid.uuid4()), model)
        self.model = model
        self.message_list = message_list
        self.tools = tools
        self.options = options
        self.request_context = request_context
        self.pending: list[Chunk] = []
        self.runner = ProcessorRunner(
            input_processors=input_processors,
            output_processors=output_processors,
            error_processors=error_processors,
            request_context=request_context,
            run_id=self.run_id,
            emit=self.pending.append,
            prepare_step=prepare_step,
            processor_timeout=options.processor_timeout,
        )
        if self.trace is not None:
            self.trace.attach(self.runner)
        self.state = RunState()
        self.pipeline: Any = None  # the stream processors' chain, built when the loop starts
        self.runner.abort_signal = options.abort_signal
        self._output_schema: OutputSchema | None = None

    # ------------------------------------------------------------------ the state, as read outside

    @property
    def steps(self) -> list[StepResult]:
        return self.state.steps

    @property
    def usage(self) -> Usage:
        return self.state.usage

    @property
    def finish_reason(self) -> str | None:
        return self.state.finish_reason

    @property
    def tripwire(self) -> Tripwire | None:
        return self.state.tripwire

    @property
    def error(self) -> BaseException | None:
        return self.state.error

    @property
    def object(self) -> Any:
        return self.state.object

    @property
    def aborted(self) -> bool:
        return self.state.aborted

    # ------------------------------------------------------------------ results

    def stream_text(self) -> str:
        """Accepted steps' text plus what an interrupted step had already emitted."""
        current = self.state.current.current_text() if self.state.current is not None else ""
        return "".join(self.state.accepted_text) + current

    def final_text(self) -> str:
        return "" if self.state.tripwire is not None else "".join(self.state.accepted_text)

    def reasoning_text(self) -> str:
        return "".join(s.reasoning_text for s in self.state.steps if s.finish_reason != "retry")

    def all_tool_calls(self) -> list[Chunk]:
        return [c for s in self.state.steps if s.finish_reason != "retry" for c in s.tool_calls]

    def all_tool_results(self) -> list[Chunk]:
        return [c for s in self.state.steps if s.finish_reason != "retry" for c in s.tool_results]

    def all_tool_errors(self) -> list[Chunk]:
        return [c for s in self.state.steps if s.finish_reason != "retry" for c in s.tool_errors]

    def response(self) -> Response:
        messages = self.message_list.get.response.db()
        return Response(messages=messages, ui_messages=to_ui_messages(messages))

    # ------------------------------------------------------------------ the loop and its chunks

    def chunk(self, kind: str, **payload: Any) -> Chunk:
        return Chunk(kind, self.run_id, Payload(**payload))

    def events(self) -> AsyncGenerator[Chunk, None]:
        """The run's chunks; with an `abort_signal`, a run that setting it cancels."""
        signal = self.options.abort_signal
        if signal is None:
            return run_loop(self)
        return abortable(run_loop(self), signal, self._on_abort, lambda: not self.state.finishing)

    def _on_abort(self) -> Chunk:
        """The run was cancelled by its abort signal: record it, and the chunk that ends the stream."""
        self.state.aborted = True
        self.state.finish_reason = "abort"
        return self.chunk("abort")

    def drain_pending(self) -> list[Chunk]:
        if not self.pending:
            return []
        chunks = list(self.pending)
        self.pending.clear()
        return chunks

    async def drain_processed(self) -> list[Chunk]:
        """Chunks processors wrote, with each `data-*` one passed through the stream processors
        that opted in (`process_data_parts`). What they write meanwhile goes out as it is, so
        two processors cannot feed each other forever."""
        chunks = self.drain_pending()
        if not chunks or self.pipeline is None or not self.runner.has_data_part_processors:
            return chunks
        out: list[Chunk] = []
        for chunk in chunks:
            if not chunk.type.startswith("data-"):
                out.append(chunk)
                continue
            result = await self.pipeline(chunk)
            if isinstance(result, list):
                out.extend(result)
            elif result is not None:
                out.append(result)
            out.extend(self.drain_pending())
        return out

    async def emit_processed(self, chunk: Chunk) -> list[Chunk]:
        """A lifecycle chunk through the stream processors (off the hot path)."""
        if self.pipeline is None:
            return [chunk]
        result = await self.pipeline(chunk)
        out = [] if result is None else result if isinstance(result, list) else [result]
        return [*out, *await self.drain_processed()]

    def schema_for(self, structured_output: Any) -> OutputSchema:
        """The run's schema, read once; a step's own (from `process_input_step`) read per step."""
        if structured_output is not self.options.structured_output:
            return output_schema(structured_output)
        if self._output_schema is None:
            self._output_schema = output_schema(structured_output)
        return self._output_schema
