"""A step that waits on people, on the run's side: it is held (stored, the stream ends with the
question), and a resumed run continues it with a decision.

The states of one held step, over any number of streams and processes:

    tool calls -> [some wait] -> held: snapshot saved, `tool-call-approval` / `tool-call-suspended`
    held --approve / resume--> the call runs (it may suspend again) --+
    held --decline----------> `tool-output-denied`, the call never runs --+
        +--> calls still undecided: held again (next version), the next question
        +--> all decided: the held results in call order, `step-finish`, the loop goes on

Which calls wait is decided in `call_tool` (`decisions.needs_approval`, `ToolContext.suspend`); the
snapshot's shape is `suspension`'s.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, cast

from sluicegate.agent.decisions import Decision
from sluicegate.agent.held_step import PENDING_KINDS, HeldStep, pending_call
from sluicegate.agent.results import StepResult
from sluicegate.agent.run_summary import summarize
from sluicegate.agent.step import StepRecorder
from sluicegate.agent.suspension import take_snapshot
from sluicegate.agent.tool_phase import traced_tool
from sluicegate.errors import ConfigurationError
from sluicegate.processors.runner import Writer
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.payload import Payload

if TYPE_CHECKING:
    from sluicegate.agent.run_core import RunCore

log = logging.getLogger("sluicegate.agent")

PURGE_EVERY = 3600.0
"""Seconds between sweeps of expired suspended runs, made by whichever run suspends next."""
_last_purge: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


async def hold_step(
    run: RunCore, step: StepRecorder, results: list[Chunk], model: str
) -> AsyncGenerator[Chunk, None]:
    """The end of a step some of whose calls wait: store the run, ask about the first. `model`
    names the model that served the step."""
    held = HeldStep(
        step_number=step.step_number,
        tool_calls=list(step.tool_calls),
        finish_reason=step.finish_reason,
        usage=step.usage,
        text=step.text(),
        reasoning_text=step.reasoning_text(),
        warnings=list(step.warnings),
        response=dict(step.response),
        model=model,
        message_list=run.message_list,
    )
    for chunk in results:
        if chunk.type in PENDING_KINDS:
            held.queue.append(pending_call(chunk))
        else:
            held.results[chunk.payload.tool_call_id] = chunk
    async for chunk in _suspend(run, held):
        yield chunk


async def _suspend(run: RunCore, held: HeldStep) -> AsyncGenerator[Chunk, None]:
    from sluicegate.storage.suspended_runs import SuspendedRun
    from sluicegate.storage.types import utc_now

    if run.suspended_runs is None:
        raise ConfigurationError("this run has no suspended-run store: it cannot wait for a person")
    store = run.suspended_runs()
    snapshot = cast(dict[str, Any], take_snapshot(run, held, run.require_approval not in (None, False)))
    now = utc_now()
    expires = now + run.suspended_run_ttl
    if run.claimed is None:
        stored = SuspendedRun(
            run_id=run.run_id,
            agent_id=run.agent_id,
            resource_id=run.message_list.resource_id,
            thread_id=run.message_list.thread_id,
            pending=(held.queue[0],),
            snapshot=snapshot,
            suspended_at=now,
            expires_at=expires,
        )
    else:
        stored = run.claimed.resuspended(
            pending=(held.queue[0],), snapshot=snapshot, suspended_at=now, expires_at=expires
        )
    await store.save_suspended_run(stored)
    await _purge_now_and_then(store)
    run.claimed = None  # the new version is claimable again; this run no longer owns it
    run.state.held = held
    for chunk in await run.emit_processed(held.pending_chunk(run.run_id, run.tools)):
        yield chunk


async def continue_step(run: RunCore, held: HeldStep, decision: Decision) -> AsyncGenerator[Chunk, None]:
    """The resumed stream's opening: the decided call, then the next question or the step's end
    (the held results in call order and its `step-finish`). Leaves `run.state.held` set when
    the run waits again."""
    call = held.queue.pop(0)
    assert call.tool_call_id == decision.tool_call_id
    run.state.decided = True
    if decision.action == "decline":
        invocation = held.invocation(call.tool_call_id)
        if invocation is not None:
            invocation["state"] = "result"
            invocation["result"] = decision.reason
            if call.kind == "approval":
                invocation["approval"] = {"id": call.tool_call_id, "approved": False}
        held.results[call.tool_call_id] = Chunk(
            "tool-output-denied",
            run.run_id,
            Payload(
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                args=call.args,
                reason=decision.reason,
                approval=Payload(id=call.tool_call_id, approved=False, reason=decision.reason),
            ),
        )
    else:
        run.state.approved.add(call.tool_call_id)  # approved, or a tool past any approval it needed
        invocation = held.invocation(call.tool_call_id) if call.kind == "approval" else None
        if invocation is not None:  # as Mastra records the decision on the stored call
            invocation["approval"] = {"id": call.tool_call_id, "approved": True}
        if decision.action == "resume":
            run.state.resume_data[call.tool_call_id] = decision.resume_data
            run.state.suspended_with[call.tool_call_id] = call.suspend_payload
        # The stored args run, whatever the caller holds: a decision cannot change them.
        tool_call = Chunk(
            "tool-call",
            run.run_id,
            Payload(tool_call_id=call.tool_call_id, tool_name=call.tool_name, args=call.args),
        )
        writer = Writer(run.run_id, run.pending.append)
        result = await traced_tool(run, tool_call, run.tools, writer, held)
        for chunk in await run.drain_processed():
            yield chunk
        if result.type in PENDING_KINDS:
            held.queue.insert(0, pending_call(result))
        else:
            held.results[call.tool_call_id] = result
    if held.queue:
        async for chunk in _suspend(run, held):
            yield chunk
        return
    tool_results: list[Chunk] = []
    tool_errors: list[Chunk] = []
    for chunk in held.ordered_results():
        if chunk.type == "tool-result":
            tool_results.append(chunk)
        elif chunk.type == "tool-error":
            tool_errors.append(chunk)
        for out in await run.emit_processed(chunk):
            yield out
    run.state.steps.append(
        StepResult(
            step_number=held.step_number,
            text=held.text,
            reasoning_text=held.reasoning_text,
            tool_calls=list(held.tool_calls),
            tool_results=tool_results,
            tool_errors=tool_errors,
            finish_reason=held.finish_reason,
            usage=held.usage,
            warnings=held.warnings,
            response=held.response,
            model=held.model,
        )
    )
    run.state.accepted_text.append(held.text)  # as `model_step` does for a step that ends there
    run.state.streamed_from = len(run.state.accepted_text)
    finish = run.chunk(
        "step-finish",
        step_result=Payload(
            reason=held.finish_reason,
            warnings=held.warnings,
            is_continued=held.finish_reason == "tool-calls" and bool(held.tool_calls),
            message_id=run.message_id,  # as Mastra names the message after a resumed step
        ),
        output=Payload(usage=held.usage),
        metadata=Payload(**{**held.response, "model": held.model}),
    )
    summarize(finish.payload, run, final=False)
    for chunk in await run.emit_processed(finish):
        yield chunk


async def _purge_now_and_then(store: Any) -> None:
    """Expired runs are deleted at most every `PURGE_EVERY` seconds per store, by a run that
    suspends (never on the streaming path); a sweep that fails is logged, not the run's failure."""
    now = time.monotonic()
    try:
        last = _last_purge.get(store)
        if last is not None and now - last < PURGE_EVERY:
            return
        _last_purge[store] = now
    except TypeError:  # a store that cannot be weakly referenced: its owner purges it
        return
    try:
        purged = await store.purge_expired_suspended_runs()
    except Exception as exc:
        log.warning("purging expired suspended runs failed: %s", exc)
        return
    if purged:
        log.info("purged %d expired suspended runs", purged)
