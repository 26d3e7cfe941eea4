"""One step's model call: the prompt through `process_llm_request`, the provider stream (or a
replayed response) chunk by chunk through the stream processors to the client, a failed call's
recovery, then `process_output_step`, `process_llm_response` and the step's tools.

The per-chunk loop in `model_step` is the hot path and is kept flat on purpose: one function,
its locals bound before the loop, no extra generator layer, no per-chunk validation or copying.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from sluicegate.agent.call_options import build_call_options
from sluicegate.agent.chunk_stream import DEADLINE, Handover, record_chunk, stream_chunks
from sluicegate.agent.deadline_stream import with_deadlines
from sluicegate.agent.held_step import PENDING_KINDS
from sluicegate.agent.hold import hold_step
from sluicegate.agent.model_parts import ModelStreamError
from sluicegate.agent.results import StepResult, Tripwire
from sluicegate.agent.run_summary import summarize
from sluicegate.agent.step import StepRecorder
from sluicegate.agent.step_retry import DEFAULT_RETRY_CAP, add_feedback, can_retry, step_retry_cap
from sluicegate.agent.tool_phase import provider_tool_result, run_tools
from sluicegate.clock import now_ms
from sluicegate.errors import APICallError, ProcessorError, TripWire
from sluicegate.ids import new_uuid
from sluicegate.models.base import CallOptions, LanguageModel, model_label
from sluicegate.models.registry import resolve_model
from sluicegate.models.retries import is_retryable, open_stream
from sluicegate.processors.runner import StepConfig
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.payload import Payload

if TYPE_CHECKING:
    from sluicegate.agent.observe import LogTap
    from sluicegate.agent.ports import ModelCaller
    from sluicegate.agent.run_core import RunCore

log = logging.getLogger("sluicegate.agent")

_OUTCOMES = frozenset(("tool-result", "tool-error", "tool-output-denied", *PENDING_KINDS))


def _lower_output_limit(options: CallOptions, cap: int | None) -> None:
    if cap is not None and (options.max_output_tokens is None or cap < options.max_output_tokens):
        options.max_output_tokens = cap


class UnrecoveredError(Exception):
    """A failed model call that no error processor recovered: the step ends with reason `error`."""

    def __init__(self, error: BaseException, step: StepRecorder) -> None:
        super().__init__(str(error))
        self.error = error
        self.step = step


async def model_step(
    run: RunCore,
    step_number: int,
    config: StepConfig,
    *,
    hand_over: bool = False,
    tap: LogTap | None = None,
) -> AsyncGenerator[Chunk | Handover, None]:
    """One model call and its tools. Leaves the outcome in `run.state.current`. With
    `hand_over`, the model call's chunks are handed to the caller (`Handover`), who iterates
    them and throws a failure back in; with a `tap` too, their stream writes them to the run's
    log itself (the caller appends the rest).

    With fallback models a failed call moves to the next model inside this step (see
    `_falls_over`): the loop below runs once per model, the hot path inside it unchanged."""
    runner = run.runner
    chain = run.models
    if config.model is not chain.current:
        # A processor chose this step's model: it takes the current model's place in the chain.
        chain = chain.with_chosen(resolve_model(config.model), run.options.max_retries)
    # A chain whose calls run the stream processors themselves (a durable run's model activity)
    # hands over processed chunks: they are not passed through them again here, and nothing of
    # them is held here to flush.
    pipeline = None if chain.processes_stream else run.pipeline
    # Model-level chunks are kept only for processors that read them in `process_llm_response`
    # (as copies when stream processors could change them in place).
    keeps_model_chunks = runner.handles_llm_response

    async def on_tool_result(chunk: Chunk, step: StepRecorder) -> None:
        await provider_tool_result(run, chunk, step)

    announced = False  # whether this step's `step-start` went out
    opening: list[Chunk] | None = None  # the step's processed `step-start`, made once
    # The `step-start` chunk's messageId is the id the step's assistant message is stored
    # under, so a client that reloads the thread finds the message it streamed, not a twin.
    message_id = str(new_uuid())
    while True:
        model = await chain.pick()
        call_options, replay = await _call_options(run, config, model, step_number)
        step = StepRecorder(step_number)
        run.state.current = step
        # As Mastra: a model with a fallback after it shows its step only once its stream opened,
        # so a call that fails before that and moves on leaves no trace in the stream. A call that
        # publishes its chunks itself (`publishes_live`) is handed the step's start to publish
        # when its stream opens; the loop yields the same chunks then (already in the log).
        if not announced and (chain.is_last or chain.publishes_live):
            if opening is None:
                opening = await run.emit_processed(_step_start(run, message_id))
            if chain.is_last:
                announced = True
                for chunk in opening:
                    yield chunk
            else:
                chain.announce_on_open(opening)
        closables: list[Any] = []
        opened = False
        try:
            if replay is not None:
                source: AsyncIterator[Any] = _iterate(replay)
            else:
                stream = (await open_stream(model, call_options, chain.max_retries)).stream
                closables.append(stream)
                deadlines = pipeline is not None and runner.uses_stream_deadlines
                source = _with_deadlines(run, stream) if deadlines else stream
            closables.append(source)
            opened = True
            if not announced:
                announced = True
                if opening is None:
                    opening = await run.emit_processed(_step_start(run, message_id))
                for chunk in opening:
                    yield chunk
            chunks = stream_chunks(
                source,
                step,
                runner,
                pipeline,
                run.drain_processed,
                pending=run.pending,
                keep=step.model_chunks.append if keeps_model_chunks else None,
                on_tool_result=on_tool_result if runner.handles_tool_result else None,
                before_flush=run.state.input_gate,
                tap=tap if hand_over else None,
            )
            closables.append(chunks)
            if hand_over:
                yield Handover(chunks)  # see Handover: the loop iterates them
            else:
                async for chunk in chunks:
                    yield chunk
        except (TripWire, ProcessorError):
            raise
        except Exception as exc:
            recovered, retried = await _recover(
                run, exc, step, model, chain, opened, replay is not None, pipeline
            )
            for chunk in recovered:
                yield chunk
            if retried:
                return
            continue
        finally:
            await _close_all(closables)
        if replay is None:
            await chain.record(model, None)
        break
    if run.trace is not None:
        run.trace.end_chat(step)
    async for chunk in _after_stream(run, step, config, model, message_id, replay is not None):
        yield chunk


async def _call_options(
    run: RunCore, config: StepConfig, model: LanguageModel, step_number: int
) -> tuple[CallOptions, Any]:
    """The call's options (its prompt through `process_llm_request`, its output capped by what
    request processors priced), and a response those processors replay instead (or None)."""
    runner = run.runner
    call_options = build_call_options(
        config, run.message_list.to_prompt(), run.schema_for, run.tool_definitions
    )
    _lower_output_limit(call_options, runner.output_token_cap())
    prompt, replay = await runner.run_llm_request(
        call_options.prompt,
        model=model,
        tools=call_options.tools,
        tool_choice=call_options.tool_choice,
        step_number=step_number,
        steps=run.state.steps,
        message_list=run.message_list,
        max_output_tokens=call_options.max_output_tokens,
    )
    call_options.prompt = prompt
    # What request processors priced (the cost guard's reservation) caps what is sent.
    _lower_output_limit(call_options, runner.output_token_cap(request=True))
    if run.trace is not None:
        run.trace.begin_step(step_number, model, call_options, replayed=replay is not None)
    return call_options, replay


async def _recover(
    run: RunCore,
    exc: Exception,
    step: StepRecorder,
    model: LanguageModel,
    chain: ModelCaller,
    opened: bool,
    replayed: bool,
    pipeline: Any,
) -> tuple[list[Chunk], bool]:
    """A failed model call: `(chunks, True)` when an error processor retries the step (the
    attempt ends as a `retry` step), `(chunks, False)` when the step moves to the next model;
    `UnrecoveredError` when neither."""
    error = exc.error if isinstance(exc, ModelStreamError) else exc
    if isinstance(error, APICallError) and error.provider is None:
        error.provider = getattr(model, "provider", None)
    if run.trace is not None:
        run.trace.end_chat(step, error)
    if not replayed:
        await chain.record(model, error)
    run.state.usage = run.state.usage + step.usage
    if await _error_processors_retry(run, error, step, model):
        out = await run.drain_processed()
        return [*out, *[chunk async for chunk in _finish_retried(run, step, model)]], True
    if not (_falls_over(error, opened) and chain.advance()):
        raise UnrecoveredError(error, step) from exc
    out = []
    if pipeline is not None and run.runner.flushes_stream:
        # What processors hold back of the failed attempt is its output, not the next model's:
        # released now, it is shown (and cleared) with the attempt.
        for flushed in await run.runner.flush_stream():
            record_chunk(flushed, step)
            out.append(flushed)
    out.extend(await run.drain_processed())
    out.extend(await _fell_over(run, error, step, model, chain.current))
    return out, False


async def _close_all(closables: list[Any]) -> None:
    """A consumer that stops reading (or an abort) ends the provider call now, not at GC."""
    for closable in reversed(closables):
        aclose = getattr(closable, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except Exception:  # already closing (a cancelled read), or a provider's own failure
                log.debug("closing the model stream failed", exc_info=True)


def _response_message(run: RunCore, step: StepRecorder, model: LanguageModel, message_id: str) -> Any:
    """The step's assistant message, added to the list as a response (None: nothing to say)."""
    message_list = run.message_list
    response = step.to_message(
        thread_id=message_list.thread_id, resource_id=message_list.resource_id, message_id=message_id
    )
    if response is not None:
        # As Mastra stores it: which model wrote the message (UI messages show it as metadata).
        response.content.metadata = {
            **(response.content.metadata or {}),
            "modelId": str(getattr(model, "model_id", "")),
            "provider": str(getattr(model, "provider", "")),
        }
        message_list.add(response, "response")
    return response


async def _after_stream(
    run: RunCore,
    step: StepRecorder,
    config: StepConfig,
    model: LanguageModel,
    message_id: str,
    replayed: bool,
) -> AsyncGenerator[Chunk, None]:
    """The step after its model call: its message, `process_output_step` (a rejection retries
    the step), `process_llm_response`, then its tools and `step-finish`."""
    runner = run.runner
    message_list = run.message_list
    usage_before = run.state.usage
    run.state.usage = run.state.usage + step.usage
    step.model_chunks.append(
        run.chunk("finish", step_result=Payload(reason=step.finish_reason), output=Payload(usage=step.usage))
    )
    step.finalize_parts()
    response = _response_message(run, step, model, message_id)

    async def llm_response(accepted: bool) -> None:
        await runner.run_llm_response(
            step.model_chunks,
            model=model,
            step_number=step.step_number,
            steps=run.state.steps,
            from_cache=replayed,
            accepted=accepted,
            message_list=message_list,
            warnings=step.warnings,
        )

    try:
        await runner.run_output_step(
            message_list,
            step_number=step.step_number,
            finish_reason=step.finish_reason,
            tool_calls=step.tool_calls,
            text=step.text(),
            usage=step.usage,
            steps=run.state.steps,
        )
    except TripWire as tripwire:
        await llm_response(accepted=False)
        if not (tripwire.retry and can_retry(run, step_retry_cap(run))):
            raise
        run.runner.retry_count += 1
        if response is not None:
            message_list.remove_by_ids([response.id])
        add_feedback(run.state, tripwire.reason)
        rejected = Tripwire(tripwire.reason, tripwire.retry, tripwire.metadata, tripwire.processor_id)
        async for chunk in _finish_retried(run, step, model, rejected):
            yield chunk
        return
    await llm_response(accepted=True)
    for chunk in await run.drain_processed():
        yield chunk
    async for chunk in _tools_and_finish(run, step, config, model, replayed, usage_before):
        yield chunk


async def _tools_and_finish(
    run: RunCore,
    step: StepRecorder,
    config: StepConfig,
    model: LanguageModel,
    replayed: bool,
    usage_before: Any,
) -> AsyncGenerator[Chunk, None]:
    """The step's tool calls (their data chunks live, their results in call order), then the
    step's result and its `step-finish`; a call that waits on a person holds the step instead."""
    step_number = step.step_number
    tool_results: list[Chunk] = list(step.replayed_results.values())
    tool_errors: list[Chunk] = []
    if step.tool_calls:
        try:
            outcomes: list[Chunk] = []  # the calls' results, in call order, after their data chunks
            async with aclosing(run_tools(run, step, config)) as tool_chunks:
                async for chunk in tool_chunks:
                    if chunk.type in _OUTCOMES:
                        outcomes.append(chunk)
                        continue
                    for out in await run.emit_processed(chunk):
                        yield out
            if any(chunk.type in PENDING_KINDS for chunk in outcomes):
                # Some call waits on a person: the results are held back with the step.
                async for chunk in hold_step(run, step, outcomes, model_label(model)):
                    yield chunk
                return
            for chunk in outcomes:
                if chunk.type == "tool-result":
                    tool_results.append(chunk)
                elif chunk.type == "tool-error":
                    tool_errors.append(chunk)
                for out in await run.emit_processed(chunk):
                    yield out
        except TripWire:
            # As Mastra records it: a step interrupted while its tools run has not
            # finished, so its usage is not reported.
            run.state.usage = usage_before
            raise

    run.state.steps.append(
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
            from_cache=replayed,
            model=model_label(model),
        )
    )
    run.state.accepted_text.append(step.text())
    finish = run.chunk(
        "step-finish",
        step_result=Payload(
            reason=step.finish_reason,
            warnings=step.warnings,
            is_continued=step.finish_reason == "tool-calls" and bool(step.tool_calls),
        ),
        output=Payload(usage=step.usage),
        metadata=Payload(**{**step.response, "model": model_label(model)}),
    )
    summarize(finish.payload, run, final=False)
    for chunk in await run.emit_processed(finish):
        yield chunk


def _step_start(run: RunCore, message_id: str) -> Chunk:
    """The step's first chunk: the id its message will have, and Mastra's `request`, `warnings`
    and `startedAt` (epoch ms)."""
    return run.chunk("step-start", message_id=message_id, request={}, warnings=[], started_at=now_ms())


async def _error_processors_retry(
    run: RunCore, error: BaseException, step: StepRecorder, model: LanguageModel
) -> bool:
    """A failed model call: whether an error processor asked to retry it (within the cap)."""
    retry = await run.runner.run_api_error(
        error,
        message_list=run.message_list,
        step_number=step.step_number,
        steps=run.state.steps,
        model=model,
    )
    cap = run.options.max_processor_retries
    if retry and run.runner.retry_count < (cap if cap is not None else DEFAULT_RETRY_CAP):
        run.runner.retry_count += 1
        return True
    return False


def _falls_over(error: BaseException, opened: bool) -> bool:
    """Whether a failure may move the step to the next model: any failure to open the stream
    (another provider may take what this one refused), and a retryable one inside a stream
    that already started (a 500 mid-stream, an overload event); a non-retryable error inside a
    stream (a content filter, a malformed answer) would most likely repeat."""
    return not opened or is_retryable(error)


async def _fell_over(
    run: RunCore, error: BaseException, step: StepRecorder, failed: LanguageModel, serving: LanguageModel
) -> list[Chunk]:
    """The step moved to `serving`. When some of the failed attempt already reached the client
    (any part beyond its `step-start`), a `data-model-fallback` chunk says so before the next
    model's output, so a UI can clear it; the attempt's text is never recorded."""
    reason = error.public_message if isinstance(error, APICallError) else type(error).__name__
    log.warning(
        "agent %r run %s: %s failed (%s); %s serves step %d",
        run.agent_id,
        run.run_id,
        model_label(failed),
        reason,
        model_label(serving),
        step.step_number,
    )
    if len(step.parts) <= 1:
        return []
    data: dict[str, Any] = {
        "failedModel": model_label(failed),
        "nextModel": model_label(serving),
        "error": reason,
        "statusCode": getattr(error, "status_code", None),
        "isRetryable": is_retryable(error),
        "stepNumber": step.step_number,
    }
    chunk = Chunk("data-model-fallback", run.run_id, data=data)
    chunk.transient = True  # shown live, never stored: the answer it clears is not stored either
    return await run.emit_processed(chunk)


async def _finish_retried(
    run: RunCore, step: StepRecorder, model: LanguageModel, tripwire: Tripwire | None = None
) -> AsyncIterator[Chunk]:
    """The attempt is dropped: it stays in `steps` as a `retry` step (with the processor's
    `tripwire` when one rejected it), and the next one follows."""
    step.finish_reason = "retry"
    run.state.steps.append(
        StepResult(
            step_number=step.step_number,
            finish_reason="retry",
            usage=step.usage,
            model=model_label(model),
            tripwire=tripwire,
        )
    )
    finish = run.chunk(
        "step-finish",
        step_result=Payload(reason="retry", warnings=[], is_continued=True),
        output=Payload(usage=step.usage),
    )
    for chunk in await run.emit_processed(finish):
        yield chunk


def _with_deadlines(run: RunCore, stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The model stream, interleaved with `DEADLINE` markers when a stream processor's
    buffered chunks are due (see `BatchPartsProcessor`)."""
    return with_deadlines(stream, run.runner.next_stream_deadline, DEADLINE)


async def _iterate(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item
