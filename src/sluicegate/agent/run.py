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
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from sluicegate.agent.abort import abortable
from sluicegate.agent.call_options import build_call_options, normalize_tool_choice
from sluicegate.agent.deadline_stream import with_deadlines
from sluicegate.agent.model_parts import ModelStreamError, convert
from sluicegate.agent.results import Response, StepResult, Tripwire
from sluicegate.agent.run_state import RunState
from sluicegate.agent.step import StepRecorder
from sluicegate.agent.step_retry import DEFAULT_RETRY_CAP, add_feedback, can_retry, step_retry_cap
from sluicegate.agent.structured import DEFAULT_OUTPUT_RETRIES, OutputSchema, output_schema, retry_feedback
from sluicegate.agent.tool_phase import provider_tool_result, run_tools
from sluicegate.errors import (
    ProcessorError,
    StructuredOutputError,
    TripWire,
)
from sluicegate.messages import Message, MessageList
from sluicegate.messages.convert import to_ui_messages
from sluicegate.models.base import LanguageModel
from sluicegate.models.registry import resolve_model
from sluicegate.models.retries import DEFAULT_MAX_RETRIES, open_stream
from sluicegate.processors.args import OutputResult
from sluicegate.processors.hook_timeout import DEFAULT_PROCESSOR_TIMEOUT
from sluicegate.processors.input_guards import gated
from sluicegate.processors.runner import ProcessorRunner, StepConfig
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk, TextPayload
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage
from sluicegate.tools import Tool, normalize_tools
from sluicegate.tracing.run_start import begin_run

__all__ = ["DEFAULT_MAX_STEPS", "AgentRun", "RunOptions", "normalize_tool_choice"]

log = logging.getLogger("sluicegate.agent")

DEFAULT_MAX_STEPS = 5
_DEADLINE = {"type": "__deadline__"}


class _UnrecoveredError(Exception):
    """A failed model call that no error processor recovered: the step ends with reason `error`."""

    def __init__(self, error: BaseException, step: StepRecorder) -> None:
        super().__init__(str(error))
        self.error = error
        self.step = step


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
                step_chunks = self._model_step(self.state.step_number, config)
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
        except _UnrecoveredError as failed:
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

    async def _model_step(self, step_number: int, config: StepConfig) -> AsyncGenerator[Chunk, None]:
        """One model call and its tools. Leaves the outcome in `self.state.current`."""
        runner = self.runner
        message_list = self.message_list
        model = resolve_model(config.model)
        call_options = build_call_options(config, message_list.to_prompt(), self.schema_for)
        cap = runner.output_token_cap()
        if cap is not None and (
            call_options.max_output_tokens is None or cap < call_options.max_output_tokens
        ):
            call_options.max_output_tokens = cap
        prompt, replay = await runner.run_llm_request(
            call_options.prompt,
            model=model,
            tools=call_options.tools,
            tool_choice=call_options.tool_choice,
            step_number=step_number,
            steps=self.state.steps,
            message_list=message_list,
        )
        call_options.prompt = prompt
        if self.trace is not None:
            self.trace.begin_step(step_number, model, call_options, replayed=replay is not None)
        step = StepRecorder(step_number)
        self.state.current = step
        for chunk in await self.emit_processed(self.chunk("step-start", message_id=str(uuid.uuid4()))):
            yield chunk

        run_id = self.run_id
        pipeline = self.pipeline
        pending = self.pending
        # Model-level chunks are kept only for processors that read them in
        # `process_llm_response`, as copies when stream processors could change them in place.
        model_chunks_append = step.model_chunks.append if runner.handles_llm_response else None
        record = step.record
        closables: list[Any] = []
        try:
            if replay is not None:
                source: AsyncIterator[Any] = _iterate(replay)
            else:
                stream = (await open_stream(model, call_options, self.options.max_retries)).stream
                closables.append(stream)
                source = self._with_deadlines(stream) if runner.uses_stream_deadlines else stream
            closables.append(source)
            async for part in source:
                # ---- the hot path: one model part -> one chunk -> processors -> client
                if part.__class__ is dict and part["type"] == "text-delta":
                    chunk = Chunk("text-delta", run_id, TextPayload(part["id"], part["delta"]))
                elif part.__class__ is Chunk and part.type == "text-delta":  # a replayed response
                    part.run_id = run_id
                    chunk = part
                else:
                    if part is _DEADLINE:
                        for flushed in await runner.run_stream_deadlines():
                            self._record(flushed, step)
                            yield flushed
                        continue
                    converted = convert(part, step, run_id)
                    if converted is None:
                        continue
                    if converted.type == "tool-result" and runner.handles_tool_result:
                        await provider_tool_result(self, converted, step)
                    chunk = converted
                if model_chunks_append is not None:
                    model_chunks_append(chunk if pipeline is None else chunk.copy())
                if pipeline is not None:
                    result = await pipeline(chunk)
                    if result is None:
                        if pending:
                            for extra in await self.drain_processed():
                                yield extra
                        continue
                    if result.__class__ is not Chunk:
                        for out in result:
                            self._record(out, step)
                            yield out
                        continue
                    chunk = result
                if chunk.type == "text-delta":
                    pieces = step.open_text
                    if pieces is None:
                        pieces = step.start_text()
                    pieces.append(chunk.payload.text)
                else:
                    record(chunk)
                yield chunk
                if pending:
                    for extra in await self.drain_processed():
                        yield extra
            if self.state.input_gate is not None:
                await self.state.input_gate  # no tool runs before the parallel input guards pass
            if pipeline is not None and runner.flushes_stream:
                # The step's text is over: processors holding some back release it now.
                for flushed in await runner.flush_stream():
                    self._record(flushed, step)
                    yield flushed
                for extra in await self.drain_processed():
                    yield extra
        except (TripWire, ProcessorError):
            raise
        except Exception as exc:
            error = exc.error if isinstance(exc, ModelStreamError) else exc
            if self.trace is not None:
                self.trace.end_chat(step, error)
            async for chunk in self._recover(error, step):
                yield chunk
            return
        finally:
            # A consumer that stops reading (or an abort) ends the provider call now, not at GC.
            for closable in reversed(closables):
                aclose = getattr(closable, "aclose", None)
                if aclose is not None:
                    try:
                        await aclose()
                    except Exception:  # already closing (a cancelled read), or a provider's own failure
                        log.debug("closing the model stream failed", exc_info=True)
        if self.trace is not None:
            self.trace.end_chat(step)

        usage_before = self.state.usage
        self.state.usage = self.state.usage + step.usage
        step.model_chunks.append(
            self.chunk(
                "finish", step_result=Payload(reason=step.finish_reason), output=Payload(usage=step.usage)
            )
        )
        step.finalize_parts()
        response = step.to_message(thread_id=message_list.thread_id, resource_id=message_list.resource_id)
        if response is not None:
            message_list.add(response, "response")

        async def llm_response(accepted: bool) -> None:
            await runner.run_llm_response(
                step.model_chunks,
                model=model,
                step_number=step_number,
                steps=self.state.steps,
                from_cache=replay is not None,
                accepted=accepted,
                message_list=message_list,
            )

        try:
            await runner.run_output_step(
                message_list,
                step_number=step_number,
                finish_reason=step.finish_reason,
                tool_calls=step.tool_calls,
                text=step.text(),
                usage=step.usage,
                steps=self.state.steps,
            )
        except TripWire as tripwire:
            await llm_response(accepted=False)
            if not (tripwire.retry and can_retry(self, step_retry_cap(self))):
                raise
            self.runner.retry_count += 1
            if response is not None:
                message_list.remove_by_ids([response.id])
            add_feedback(self.state, tripwire.reason)
            async for chunk in self._finish_retried(step):
                yield chunk
            return
        await llm_response(accepted=True)
        for chunk in await self.drain_processed():
            yield chunk

        tool_results: list[Chunk] = list(step.replayed_results.values())
        tool_errors: list[Chunk] = []
        if step.tool_calls:
            try:
                async with aclosing(run_tools(self, step, config)) as tool_chunks:
                    async for chunk in tool_chunks:
                        if chunk.type == "tool-result":
                            tool_results.append(chunk)
                        elif chunk.type == "tool-error":
                            tool_errors.append(chunk)
                        for out in await self.emit_processed(chunk):
                            yield out
            except TripWire:
                # As Mastra records it: a step interrupted while its tools run has not
                # finished, so its usage is not reported.
                self.state.usage = usage_before
                raise

        self.state.steps.append(
            StepResult(
                step_number=step_number,
                text=step.text(),
                reasoning_text=step.reasoning_text(),
                tool_calls=list(step.tool_calls),
                tool_results=tool_results,
                tool_errors=tool_errors,
                finish_reason=step.finish_reason,
                usage=step.usage,
                warnings=step.warnings,
                response=step.response,
                from_cache=replay is not None,
            )
        )
        self.state.accepted_text.append(step.text())
        finish = self.chunk(
            "step-finish",
            step_result=Payload(reason=step.finish_reason, warnings=step.warnings, is_continued=False),
            output=Payload(usage=step.usage),
            metadata=Payload(**step.response),
        )
        for chunk in await self.emit_processed(finish):
            yield chunk

    def _record(self, chunk: Chunk, step: StepRecorder) -> None:
        if chunk.type == "text-delta":
            pieces = step.open_text if step.open_text is not None else step.start_text()
            pieces.append(chunk.payload.text)
        else:
            step.record(chunk)

    async def _recover(self, error: BaseException, step: StepRecorder) -> AsyncIterator[Chunk]:
        """A failed model call: ask the error processors, retry or give up."""
        self.state.usage = self.state.usage + step.usage
        retry = await self.runner.run_api_error(
            error,
            message_list=self.message_list,
            step_number=step.step_number,
            steps=self.state.steps,
            model=self.model,
        )
        cap = self.options.max_processor_retries
        if retry and self.runner.retry_count < (cap if cap is not None else DEFAULT_RETRY_CAP):
            self.runner.retry_count += 1
            for chunk in await self.drain_processed():
                yield chunk
            async for chunk in self._finish_retried(step):
                yield chunk
            return
        raise _UnrecoveredError(error, step)

    async def _finish_retried(self, step: StepRecorder) -> AsyncIterator[Chunk]:
        step.finish_reason = "retry"
        self.state.steps.append(
            StepResult(step_number=step.step_number, finish_reason="retry", usage=step.usage)
        )
        finish = self.chunk(
            "step-finish",
            step_result=Payload(reason="retry", warnings=[], is_continued=True),
            output=Payload(usage=step.usage),
        )
        for chunk in await self.emit_processed(finish):
            yield chunk

    def _with_deadlines(self, stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """The model stream, interleaved with `_DEADLINE` markers when a stream processor's
        buffered chunks are due (see `BatchPartsProcessor`)."""
        return with_deadlines(stream, self.runner.next_stream_deadline, _DEADLINE)

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


async def _iterate(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item
