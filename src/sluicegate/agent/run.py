"""`AgentRun`: one `generate`/`stream` call, as an async generator of chunks.

The loop, per step: reset system messages -> `process_input_step` (+ `prepare_step`) -> build
the V2 prompt -> `process_llm_request` -> model call (or a processor's replayed response) ->
each chunk through `process_output_stream` -> `process_llm_response` -> `process_output_step`
-> tools -> `step-finish`. Then `process_output_result` and `finish`. A `TripWire` anywhere ends
the stream with a `tripwire` chunk; an unrecovered error ends it with an `error` chunk.

The per-chunk path lives in `_model_step` and is kept flat on purpose: no extra generator
layer, no per-chunk validation or copying.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from sluicegate.agent.abort import abortable
from sluicegate.agent.call_options import normalize_tool_choice
from sluicegate.agent.model_step import UnrecoveredError, model_step
from sluicegate.agent.results import Response, StepResult, Tripwire
from sluicegate.agent.run_state import RunState
from sluicegate.agent.step import StepRecorder
from sluicegate.agent.step_retry import add_feedback, can_retry, step_retry_cap
from sluicegate.agent.structured import DEFAULT_OUTPUT_RETRIES, OutputSchema, output_schema, retry_feedback
from sluicegate.errors import (
    StructuredOutputError,
    TripWire,
)
from sluicegate.messages import Message, MessageList
from sluicegate.messages.convert import to_ui_messages
from sluicegate.models.base import LanguageModel
from sluicegate.models.registry import resolve_model
from sluicegate.models.retries import DEFAULT_MAX_RETRIES
from sluicegate.processors.args import OutputResult
from sluicegate.processors.hook_timeout import DEFAULT_PROCESSOR_TIMEOUT
from sluicegate.processors.input_guards import gated
from sluicegate.processors.runner import ProcessorRunner, StepConfig
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage
from sluicegate.tools import Tool, normalize_tools
from sluicegate.tracing.run_start import begin_run

__all__ = ["DEFAULT_MAX_STEPS", "AgentRun", "RunOptions", "normalize_tool_choice"]

log = logging.getLogger("sluicegate.agent")

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
    """The state and the loop of one agent call."""

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
        self.pipeline: Any = None
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

    # ------------------------------------------------------------------ the loop

    def chunk(self, kind: str, **payload: Any) -> Chunk:
        return Chunk(kind, self.run_id, Payload(**payload))

    def events(self) -> AsyncGenerator[Chunk, None]:
        """The run's chunks; with an `abort_signal`, a run that setting it cancels."""
        signal = self.options.abort_signal
        if signal is None:
            return self._events()
        return abortable(self._events(), signal, self._on_abort, lambda: not self.state.finishing)

    def _on_abort(self) -> Chunk:
        """The run was cancelled by its abort signal: record it, and the chunk that ends the stream."""
        self.state.aborted = True
        self.state.finish_reason = "abort"
        return self.chunk("abort")

    async def _events(self) -> AsyncGenerator[Chunk, None]:
        runner = self.runner
        message_list = self.message_list
        yield self.chunk("start")
        try:
            self.pipeline = runner.stream_pipeline(message_list)
            await runner.run_input(message_list)
            self.state.input_gate = runner.parallel_input(message_list)
            for chunk in await self.drain_processed():
                yield chunk
            self.state.system_base = message_list.system_snapshot()
            while True:
                config = await self._prepare_step(self.state.step_number)
                if config is None:  # an input-step retry: the attempt never reached the model
                    continue
                step_chunks = model_step(self, self.state.step_number, config)
                if self.state.input_gate is not None:  # held until the parallel input guards pass
                    step_chunks = gated(step_chunks, self.state.input_gate)
                async with aclosing(step_chunks) as chunks:
                    async for chunk in chunks:
                        yield chunk
                self.state.input_gate = None
                step = self.state.current
                assert step is not None
                if step.finish_reason == "retry":
                    self.state.step_number += 1
                    continue
                self.state.completed += 1
                if (
                    not (step.finish_reason == "tool-calls" and step.tool_calls)
                    or self.state.completed >= self.options.max_steps
                ):
                    if self._structured_output_retry(step):
                        self.state.step_number += 1
                        continue
                    break
                self.state.step_number += 1
            self.state.finish_reason = self.state.steps[-1].finish_reason if self.state.steps else None
            self.state.current = None  # its text is accepted: an abort from here on must not count it twice
            self.state.finishing = True
            try:
                await self._run_output_result()
            finally:
                self.state.finishing = False
            for chunk in self.drain_pending():
                yield chunk
            finish = self.chunk(
                "finish",
                step_result=Payload(reason=self.state.finish_reason, warnings=[]),
                output=Payload(usage=self.state.usage),
                response=Payload(ui_messages=self.response().ui_messages),
            )
            for chunk in await self.emit_processed(finish):
                yield chunk
        except TripWire as tripwire:
            for chunk in self.drain_pending():
                yield chunk
            self.state.tripwire = Tripwire(
                tripwire.reason, tripwire.retry, tripwire.metadata, tripwire.processor_id
            )
            self.state.finish_reason = "other"
            yield self.chunk(
                "tripwire",
                reason=tripwire.reason,
                retry=tripwire.retry,
                metadata=tripwire.metadata,
                processor_id=tripwire.processor_id,
            )
        except UnrecoveredError as failed:
            for chunk in self.drain_pending():
                yield chunk
            self.state.error = failed.error
            self.state.finish_reason = "error"
            yield self.chunk("error", error=failed.error)
            yield self.chunk(
                "step-finish",
                step_result=Payload(reason="error", warnings=failed.step.warnings, is_continued=False),
                output=Payload(usage=failed.step.usage),
            )
            yield self.chunk(
                "finish",
                step_result=Payload(reason="error", warnings=[]),
                output=Payload(usage=self.state.usage),
            )
        except Exception as exc:
            for chunk in self.drain_pending():
                yield chunk
            self.state.error = exc
            self.state.finish_reason = "error"
            yield self.chunk("error", error=exc)
        finally:
            if self.trace is not None:
                self.trace.end_run(self)

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

    async def _prepare_step(self, step_number: int) -> StepConfig | None:
        """System reset and `process_input_step`; None when a processor asked to retry."""
        self.message_list.restore_system(self.state.system_base)
        config = StepConfig(
            model=self.model,
            tools=dict(self.tools),
            tool_choice=self.options.tool_choice,
            active_tools=self.options.active_tools,
            provider_options=self.options.provider_options,
            model_settings=self.options.model_settings,
            structured_output=self.options.structured_output,
        )
        try:
            config = await self.runner.run_input_step(
                self.message_list,
                config,
                step_number=step_number,
                steps=self.state.steps,
                resolve=self._resolve_step_value,
            )
            if self.state.feedback:
                self.message_list.restore_system([*self.message_list.system_snapshot(), *self.state.feedback])
            return config
        except TripWire as tripwire:
            if tripwire.retry and can_retry(self, step_retry_cap(self)):
                self.runner.retry_count += 1
                add_feedback(self.state, tripwire.reason)
                return None
            raise

    @staticmethod
    def _resolve_step_value(name: str, value: Any) -> Any:
        if name == "model":
            return resolve_model(value)
        if name == "tools":
            return normalize_tools(value)
        return value

    # ------------------------------------------------------------------ the end

    def _structured_output_retry(self, step: StepRecorder) -> bool:
        """Validate a final answer against `structured_output`; on a mismatch with retries left,
        send the problems back to the model and drop the answer from the result text."""
        if self.options.structured_output is None or step.finish_reason == "tool-calls":
            return False
        try:
            self.state.object = self.schema_for(self.options.structured_output).parse(step.text())
        except StructuredOutputError as exc:
            self.state.output_attempts += 1
            exc.attempts = self.state.output_attempts
            if self.state.output_attempts > self.options.output_retries:
                raise
            self.state.accepted_text.pop()
            self.message_list.add(Message.text_message("user", retry_feedback(exc)), "response")
            return True
        self.state.object_ready = True
        return False

    async def _run_output_result(self) -> None:
        if self.options.structured_output is not None and not self.state.object_ready:
            self.state.object = self._parse_object()
        result = OutputResult(
            text=self.final_text(),
            usage=self.state.usage,
            finish_reason=self.state.finish_reason,
            steps=self.state.steps,
            tool_calls=self.all_tool_calls(),
            tool_results=self.all_tool_results(),
        )
        await self.runner.run_output_result(self.message_list, result)

    def _parse_object(self) -> Any:
        schema = self.schema_for(self.options.structured_output)
        return schema.parse(self.state.accepted_text[-1] if self.state.accepted_text else "")

    def schema_for(self, structured_output: Any) -> OutputSchema:
        """The run's schema, read once; a step's own (from `process_input_step`) read per step."""
        if structured_output is not self.options.structured_output:
            return output_schema(structured_output)
        if self._output_schema is None:
            self._output_schema = output_schema(structured_output)
        return self._output_schema
