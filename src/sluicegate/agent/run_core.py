"""`RunCore`: what the phases of one run share: its wiring, its `state`, its results and the
chunk plumbing.

The wiring (model, tools, options, processor runner, trace, stream pipeline) is set up for the
run; what changes as the run progresses is one `RunState` (`run.state`). The phases (`run_loop`,
`model_step`, `tool_phase`, ...) are functions taking the run; `AgentRun` (`agent/run.py`) is this
plus `events()`, the loop's entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sluicegate.agent.call_options import ToolDefinitions
from sluicegate.agent.ports import IN_PROCESS_TOOLS, ModelCaller, ToolRunner
from sluicegate.agent.results import FullOutput, Response, StepResult, Tripwire
from sluicegate.agent.run_state import RunState
from sluicegate.agent.structured import DEFAULT_OUTPUT_RETRIES, OutputSchema, output_schema
from sluicegate.ids import new_uuid
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

if TYPE_CHECKING:
    from sluicegate.agent.ports import SnapshotStore
    from sluicegate.storage.suspended_runs import SuspendedRun

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


class RunCore:
    """One agent call's wiring and `state`, as its loop's phases read them."""

    def __init__(
        self,
        *,
        agent_id: str,
        models: ModelCaller,
        message_list: MessageList,
        tools: dict[str, Tool],
        input_processors: list[Any],
        output_processors: list[Any],
        error_processors: list[Any],
        request_context: RequestContext,
        options: RunOptions,
        prepare_step: Any = None,
        run_id: str | None = None,
        tool_runner: ToolRunner = IN_PROCESS_TOOLS,
    ) -> None:
        self.agent_id = agent_id
        self.message_id = str(new_uuid())
        """The response's message id, as `start` and `finish` name it."""
        self.models = models
        """The run's model(s): a fallback list moves `current` on when a model fails."""
        self.run_id, self.trace_id, self.trace = begin_run(
            agent_id, run_id or str(new_uuid()), self.models.current
        )
        self.message_list = message_list
        self.tools = tools
        self.tool_runner = tool_runner
        """How the run's tools run (see `agent.ports`)."""
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
        self.provider_error_details = False
        """Whether logs and tool errors may carry a provider's own error text (`Agent`)."""
        self.pipeline: Any = None  # the stream processors' chain, built when the loop starts
        self.processed_elsewhere: dict[int, Chunk] = {}
        """Chunks that went through the stream processors where they were made (a durable run's
        tool activity), by identity: `emit_processed` passes them on as they are, once. The
        chunk itself is held, so its id cannot name another chunk while it is listed."""
        self.processors: list[Any] = [*input_processors, *output_processors, *error_processors]
        self.require_approval: Any = None
        """`require_tool_approval`: None/False, True, or `(tool_name, args, request_context) -> bool`."""
        self.suspended_runs: Callable[[], SnapshotStore] | None = None
        """Where the run is stored when it waits on a person (set by `Agent`; a getter, so a run
        that never waits never loads the storage package)."""
        self.suspended_run_ttl = timedelta(days=7)
        self.claimed: SuspendedRun | None = None
        """The stored run this one resumes, while it holds the claim on it."""
        self.runner.abort_signal = options.abort_signal
        self.tool_definitions = ToolDefinitions(
            private=any(entry.hook == "process_llm_request" for entry in self.runner.hook_entries())
        )
        """The run's tool definitions, built once (see `ToolDefinitions`)."""
        self._output_schema: OutputSchema | None = None

    @property
    def model(self) -> LanguageModel:
        """The model serving the run now (the one that answered last, with fallback models)."""
        return self.models.current

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
    def steps_exhausted(self) -> bool:
        return self.state.steps_exhausted

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
        """The accepted text this stream emitted, plus what an interrupted step had already
        emitted (a resumed stream's starts after the resume, as Mastra's stream `text`)."""
        current = self.state.current.current_text() if self.state.current is not None else ""
        return "".join(self.state.accepted_text[self.state.streamed_from :]) + current

    def final_text(self) -> str:
        return "" if self.state.tripwire is not None else "".join(self.state.accepted_text)

    def reasoning_text(self) -> str:
        return "".join(s.reasoning_text for s in self.state.steps if s.finish_reason != "retry")

    def all_tool_calls(self) -> list[Chunk]:
        calls = [c for s in self.state.steps if s.finish_reason != "retry" for c in s.tool_calls]
        held = self.state.held
        return calls if held is None else [*calls, *held.tool_calls]

    def suspend_payload(self) -> Payload | None:
        """The call a suspended run waits on: `tool_call_id`, `tool_name`, `args` and the tool's
        own `suspend_payload` (None for an approval); None when the run is not suspended."""
        held = self.state.held
        if held is None or not held.queue:
            return None
        call = held.queue[0]
        return Payload(
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            args=call.args,
            suspend_payload=call.suspend_payload,
        )

    def all_tool_results(self) -> list[Chunk]:
        return [c for s in self.state.steps if s.finish_reason != "retry" for c in s.tool_results]

    def all_tool_errors(self) -> list[Chunk]:
        return [c for s in self.state.steps if s.finish_reason != "retry" for c in s.tool_errors]

    def response(self) -> Response:
        messages = self.message_list.get.response.db()
        return Response(messages=messages, ui_messages=to_ui_messages(messages))

    def full_output(self) -> FullOutput[Any]:
        """The run's results as they stand: `generate`'s answer at the end, and what the server
        reads when a `step-finish` or `finish` chunk goes out."""
        return FullOutput(
            text=self.final_text(),
            finish_reason=self.finish_reason,
            usage=self.usage,
            steps=list(self.steps),
            tool_calls=self.all_tool_calls(),
            tool_results=self.all_tool_results(),
            tripwire=self.tripwire,
            response=self.response(),
            object=self.object,
            run_id=self.run_id,
            reasoning_text=self.reasoning_text(),
            trace_id=self.trace_id,
            tool_errors=self.all_tool_errors(),
            suspend_payload=self.suspend_payload(),
            steps_exhausted=self.steps_exhausted,
            input_messages=self.message_list.get.input.db(),
            remembered_messages=self.message_list.get.remembered.db(),
        )

    # ------------------------------------------------------------------ chunks

    def chunk(self, kind: str, **payload: Any) -> Chunk:
        return Chunk(kind, self.run_id, Payload(**payload))

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
        if self.processed_elsewhere and self.processed_elsewhere.get(id(chunk)) is chunk:
            del self.processed_elsewhere[id(chunk)]
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
