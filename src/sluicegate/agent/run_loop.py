"""The step loop of a run: `start`, `process_input`, the steps, `process_output_result`,
`finish`; a `TripWire` anywhere ends it with a `tripwire` chunk, an unrecovered error with an
`error` chunk.

Each step starts again from the system messages `process_input` left, runs
`process_input_step` (+ `prepare_step`) into its `StepConfig`, then the model step (see
`model_step`). The loop continues while a step ends in tool calls, up to `max_steps` completed
steps; retried attempts (finish reason `retry`) do not count.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

from sluicegate.agent.chunk_stream import Handover
from sluicegate.agent.decisions import Decision
from sluicegate.agent.hold import continue_step
from sluicegate.agent.model_step import UnrecoveredError, model_step
from sluicegate.agent.results import Tripwire
from sluicegate.agent.run_summary import summarize
from sluicegate.agent.step import StepRecorder
from sluicegate.agent.step_retry import add_feedback, can_retry, step_retry_cap
from sluicegate.agent.structured import retry_feedback
from sluicegate.errors import APICallError, StructuredOutputError, TripWire
from sluicegate.messages import Message
from sluicegate.models.registry import resolve_model
from sluicegate.processors.args import OutputResult
from sluicegate.processors.input_guards import gated
from sluicegate.processors.runner import StepConfig
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage
from sluicegate.tools import normalize_tools

if TYPE_CHECKING:
    from sluicegate.agent.held_step import HeldStep
    from sluicegate.agent.observe import LogTap
    from sluicegate.agent.run_core import RunCore

log = logging.getLogger("sluicegate.agent")


@dataclass(frozen=True, slots=True)
class Resumption:
    """Where a resumed run starts: its held step, and what was decided about its pending call."""

    held: HeldStep
    decision: Decision


async def run_loop(
    run: RunCore, resume: Resumption | None = None, tap: LogTap | None = None
) -> AsyncGenerator[Chunk, None]:
    """The run's chunks, from `start` to `finish` (or `tripwire` / `error`, or the question of a
    run that suspends). A resumed run (`resume`) starts at its held step instead: no `start`,
    no `process_input` (it ran once, in the first stream). With a `tap`, each chunk also goes
    to the run's log as it is handed on, here rather than in a generator layer of its own (one
    generator resume less per chunk; a handed-over step's chunks by the step's stream itself),
    and the log is closed with the run's status at the end."""
    runner = run.runner
    message_list = run.message_list
    put: Callable[[Chunk], None] = _no_log
    failure: BaseException | None = None
    ended = False  # the run said its last chunk (or returned): not stopped by its consumer
    try:
        if tap is not None:
            await tap.open()
            put = tap.put
        run.pipeline = runner.stream_pipeline(message_list)
        if resume is None:
            # As in Mastra, input processors run before `start`: a tripwire there is the
            # stream's only chunk.
            await runner.run_input(message_list)
            start = run.chunk("start", id=run.agent_id, message_id=run.message_id)
            put(start)
            yield start
            run.state.input_gate = runner.parallel_input(message_list)
            for chunk in await run.drain_processed():
                put(chunk)
                yield chunk
            run.state.system_base = message_list.system_snapshot()
            more_steps = True
        else:
            async for chunk in continue_step(run, resume.held, resume.decision):
                put(chunk)
                yield chunk
            if run.state.held is not None:
                _suspended(run)
                ended = True
                return
            run.state.completed += 1
            run.state.step_number += 1
            more_steps = run.state.completed < run.options.max_steps
        while more_steps:
            config = await _prepare_step(run, run.state.step_number)
            if config is None:  # an input-step retry: the attempt never reached the model
                continue
            gate = run.state.input_gate
            step_chunks = model_step(run, run.state.step_number, config, hand_over=gate is None, tap=tap)
            if gate is not None:  # held until the parallel input guards pass
                step_chunks = gated(step_chunks, gate)
            async with aclosing(step_chunks) as chunks:
                thrown: Exception | None = None
                while True:
                    try:
                        item = await (chunks.__anext__() if thrown is None else chunks.athrow(thrown))
                    except StopAsyncIteration:
                        break
                    thrown = None
                    if not isinstance(item, Handover):
                        put(item)
                        yield item
                        continue
                    try:
                        # The hot path's last hop (its stream wrote them to the log).
                        async for chunk in item.chunks:
                            yield chunk
                    except Exception as exc:  # back into the step, which recovers or ends the run
                        thrown = exc
            run.state.input_gate = None
            if run.state.held is not None:
                _suspended(run)
                ended = True
                return
            step = run.state.current
            assert step is not None
            if step.finish_reason == "retry":
                run.state.step_number += 1
                continue
            run.state.completed += 1
            if (
                not (step.finish_reason == "tool-calls" and step.tool_calls)
                or run.state.completed >= run.options.max_steps
            ):
                if _structured_output_retry(run, step):
                    run.state.step_number += 1
                    continue
                break
            run.state.step_number += 1
        for chunk in await _finish(run):
            put(chunk)
            yield chunk
        ended = True
    except Exception as exc:  # a TripWire, an unrecovered model error, anything else
        closing = _closing(exc, inspect.currentframe())
        if closing is not None:  # raised while this loop was being closed: it may not yield again
            failure = closing
            raise closing from None
        for chunk in _ending(run, exc):
            put(chunk)
            yield chunk
        ended = True
    except BaseException as exc:  # GeneratorExit (the consumer stopped), a cancellation
        failure = exc
        raise
    finally:
        if run.claimed is not None:
            await _settle_claim(run)
        if run.trace is not None:
            run.trace.end_run(run)
        if tap is not None:
            await tap.close(ended, failure)  # after the run's own clean-up, which may give a claim back


def _no_log(chunk: Chunk) -> None:
    return None


def _closing(exc: BaseException, frame: FrameType | None) -> GeneratorExit | None:
    """The `GeneratorExit` thrown into the loop's own `frame` that `exc` interrupted, if any. A
    loop closed while it awaits (a dropped consumer's generator collected, an evicted workflow's
    coroutine closed) gets it at that await; what the clean-up of its inner generators raises
    then (e.g. "aclose(): already running") is not the run's ending: a generator that yields
    while closing is a RuntimeError. An inner generator closed by the loop itself (a provider
    stream after a tripwire) is not the loop being closed: its errors still end the run."""
    seen: set[int] = set()
    context = exc.__context__
    while context is not None and id(context) not in seen:
        if isinstance(context, GeneratorExit) and _raised_in(context, frame):
            return context
        seen.add(id(context))
        context = context.__context__
    return None


def _raised_in(exc: BaseException, frame: FrameType | None) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame is frame:
            return True
        tb = tb.tb_next
    return False


async def _finish(run: RunCore) -> list[Chunk]:
    """The run's end after its last step: `process_output_result`, then `finish`."""
    run.state.finish_reason = run.state.steps[-1].finish_reason if run.state.steps else None
    warnings = _steps_exhausted(run)
    run.state.current = None  # its text is accepted: an abort from here on must not count it twice
    run.state.finishing = True
    try:
        await _run_output_result(run)
    finally:
        run.state.finishing = False
    out = run.drain_pending()
    finish = run.chunk(
        "finish",
        step_result=Payload(reason=run.state.finish_reason, warnings=warnings),
        output=Payload(usage=run.state.usage),
        response=Payload(ui_messages=run.response().ui_messages),
    )
    summarize(finish.payload, run, final=True)
    return [*out, *await run.emit_processed(finish)]


def _ending(run: RunCore, exc: BaseException) -> list[Chunk]:
    """The chunks that end a run a `TripWire`, an unrecovered model error or another exception
    stopped, after what processors had written."""
    out = run.drain_pending()
    if isinstance(exc, TripWire):
        run.state.tripwire = Tripwire(exc.reason, exc.retry, exc.metadata, exc.processor_id)
        run.state.finish_reason = "other"
        out.append(
            run.chunk(
                "tripwire",
                reason=exc.reason,
                retry=exc.retry,
                metadata=exc.metadata,
                processor_id=exc.processor_id,
            )
        )
        return out
    if isinstance(exc, UnrecoveredError):
        run.state.error = exc.error
        run.state.finish_reason = "error"
        if isinstance(exc.error, APICallError):
            text = exc.error.log_text(details=run.provider_error_details)
            log.warning("agent %r run %s: %s", run.agent_id, run.run_id, text)
        out.append(run.chunk("error", error=exc.error))
        out.append(
            run.chunk(
                "step-finish",
                step_result=Payload(reason="error", warnings=exc.step.warnings, is_continued=False),
                output=Payload(usage=exc.step.usage),
            )
        )
        out.append(
            run.chunk(
                "finish",
                step_result=Payload(reason="error", warnings=[]),
                output=Payload(usage=run.state.usage),
            )
        )
        return out
    run.state.error = exc
    run.state.finish_reason = "error"
    out.append(run.chunk("error", error=exc))
    return out


def _steps_exhausted(run: RunCore) -> list[dict[str, str]]:
    """Mark and log a run that `max_steps` ended while the model still wanted tools: its tools
    ran, but the model never answered with their results, so the text is what it said before
    (often nothing). Mastra reports only `finishReason: "tool-calls"`, which is easy to miss;
    here it is a WARNING, `steps_exhausted` on the result and a warning on the `finish` chunk."""
    last = run.state.steps[-1] if run.state.steps else None
    if (
        last is None
        or last.finish_reason != "tool-calls"
        or not last.tool_calls
        or run.state.completed < run.options.max_steps
    ):
        return []
    run.state.steps_exhausted = True
    message = (
        f"the run reached max_steps={run.options.max_steps} while the model still wanted tools "
        f"({', '.join(sorted({c.payload.tool_name for c in last.tool_calls}))}): it never answered "
        "with their results; raise max_steps or give the model what it needs"
    )
    log.warning("agent %r run %s: %s", run.agent_id, run.run_id, message)
    return [{"type": "other", "message": message}]


def _suspended(run: RunCore) -> None:
    """The stream ends with its question: no `finish`, no `process_output_result`; as in Mastra
    the suspended stream reports no usage (the snapshot keeps it for the resumed run)."""
    run.state.finish_reason = "suspended"
    run.state.usage = Usage()


async def _settle_claim(run: RunCore) -> None:
    """A resumed run that did not suspend again: it ended, so its stored run goes; if it
    stopped before acting on the decision (a stream closed unread), the claim is given back."""
    claimed, run.claimed = run.claimed, None
    if claimed is None or run.suspended_runs is None:
        return
    store = run.suspended_runs()
    try:
        if run.state.decided:
            await store.finish_suspended_run(claimed.run_id, version=claimed.version)
        else:
            await store.release_suspended_run(claimed.run_id, version=claimed.version)
    except Exception:
        log.error("suspended run %s: could not settle its claim", claimed.run_id, exc_info=True)


async def _prepare_step(run: RunCore, step_number: int) -> StepConfig | None:
    """System reset and `process_input_step`; None when a processor asked to retry."""
    run.message_list.restore_system(run.state.system_base)
    config = StepConfig(
        model=run.model,
        tools=dict(run.tools),
        tool_choice=run.options.tool_choice,
        active_tools=run.options.active_tools,
        provider_options=run.options.provider_options,
        model_settings=run.options.model_settings,
        structured_output=run.options.structured_output,
    )
    try:
        config = await run.runner.run_input_step(
            run.message_list,
            config,
            step_number=step_number,
            steps=run.state.steps,
            resolve=_resolve_step_value,
        )
        if run.state.feedback:
            run.message_list.restore_system([*run.message_list.system_snapshot(), *run.state.feedback])
        return config
    except TripWire as tripwire:
        if tripwire.retry and can_retry(run, step_retry_cap(run)):
            run.runner.retry_count += 1
            add_feedback(run.state, tripwire.reason)
            return None
        raise


def _resolve_step_value(name: str, value: Any) -> Any:
    if name == "model":
        return resolve_model(value)
    if name == "tools":
        return normalize_tools(value)
    return value


def _structured_output_retry(run: RunCore, step: StepRecorder) -> bool:
    """Validate a final answer against `structured_output`; on a mismatch with retries left,
    send the problems back to the model and drop the answer from the result text."""
    if run.options.structured_output is None or step.finish_reason == "tool-calls":
        return False
    try:
        run.state.object = run.schema_for(run.options.structured_output).parse(step.text())
    except StructuredOutputError as exc:
        run.state.output_attempts += 1
        exc.attempts = run.state.output_attempts
        if run.state.output_attempts > run.options.output_retries:
            raise
        run.state.accepted_text.pop()
        run.message_list.add(Message.text_message("user", retry_feedback(exc)), "response")
        return True
    run.state.object_ready = True
    return False


async def _run_output_result(run: RunCore) -> None:
    if run.options.structured_output is not None and not run.state.object_ready:
        run.state.object = _parse_object(run)
    result = OutputResult(
        text=run.final_text(),
        usage=run.state.usage,
        finish_reason=run.state.finish_reason,
        steps=run.state.steps,
        tool_calls=run.all_tool_calls(),
        tool_results=run.all_tool_results(),
    )
    await run.runner.run_output_result(run.message_list, result)


def _parse_object(run: RunCore) -> Any:
    schema = run.schema_for(run.options.structured_output)
    return schema.parse(run.state.accepted_text[-1] if run.state.accepted_text else "")
