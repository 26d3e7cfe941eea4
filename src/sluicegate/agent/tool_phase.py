"""The tool phase of a step: the model's tool calls run, concurrently, and become
`tool-result` / `tool-error` chunks (`tool-output-denied` for a call a processor refused).

`call_tool` is one call about to run: a call that needs a person's approval stops there (a
`tool-call-approval` chunk, see `hold`); otherwise `process_tool_call` may rewrite its arguments,
the tool validates and executes them (a tool that calls `context.suspend()` ends as a
`tool-call-suspended` chunk), `process_tool_result` sees what it returned. A provider-executed
tool's result only passes through `process_tool_result` (`provider_tool_result`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncGenerator, Awaitable
from typing import TYPE_CHECKING, Any, Protocol

from sluicegate.agent.call_options import active_tools
from sluicegate.agent.decisions import needs_approval
from sluicegate.agent.model_parts import MISSING_TOOL_NAME
from sluicegate.agent.step import StepRecorder, UnparsedArgs
from sluicegate.agent.tool_errors import error_text
from sluicegate.errors import SubAgentTripWire, ToolCallRefused, ToolError
from sluicegate.processors.runner import StepConfig, Writer
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.payload import Payload
from sluicegate.tools import Tool, ToolContext
from sluicegate.tools.tool import ToolInputError

if TYPE_CHECKING:
    from sluicegate.agent.run_core import RunCore

log = logging.getLogger("sluicegate.agent")


class ToolStep(Protocol):
    """The step a call belongs to: being recorded (`StepRecorder`) or held (`HeldStep`)."""

    step_number: int

    def invocation(self, tool_call_id: str) -> dict[str, Any] | None: ...


async def run_tools(run: RunCore, step: StepRecorder, config: StepConfig) -> AsyncGenerator[Chunk, None]:
    """Run the step's tool calls concurrently, streaming their data chunks as they come,
    then their results in call order."""
    replayed = step.replayed_results
    calls = [
        c
        for c in step.tool_calls
        if not c.payload.get("provider_executed") and c.payload.tool_call_id not in replayed
    ]
    if not calls:
        return
    inbox = _Inbox()
    writer = Writer(run.run_id, inbox.put)
    tools = active_tools(config)
    tasks = [asyncio.ensure_future(traced_tool(run, call, tools, writer, step)) for call in calls]
    gathered: asyncio.Future[list[Chunk]] = asyncio.gather(*tasks)
    gathered.add_done_callback(inbox.wake)
    written = inbox.chunks
    try:
        while True:
            while written:
                yield written.popleft()
            if gathered.done():
                break
            await inbox.wait()
        for chunk in gathered.result():
            yield chunk
    finally:
        for task in tasks:
            task.cancel()


class _Inbox:
    """The data chunks the step's tools write (`writer.custom`), in order, and a wake-up for
    the phase waiting on them or on the calls' end: one future per wait, where a queue read
    raced against the calls would make a task and a wait set each time."""

    __slots__ = ("chunks", "waiter")

    def __init__(self) -> None:
        self.chunks: deque[Chunk] = deque()
        self.waiter: asyncio.Future[None] | None = None

    def put(self, chunk: Chunk) -> None:
        self.chunks.append(chunk)
        self.wake()

    def wake(self, _: Any = None) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        """Until a chunk is written or `wake` is called (the calls ended)."""
        if self.chunks:
            return
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self.waiter = None


def traced_tool(
    run: RunCore, call: Chunk, tools: dict[str, Tool], writer: Writer, step: ToolStep
) -> Awaitable[Chunk]:
    """`call_tool`, inside a tool span when tracing is on."""
    work = call_tool(run, call, tools, writer, step)
    return work if run.trace is None else run.trace.tool_call(call, step.step_number, work)


async def provider_tool_result(run: RunCore, chunk: Chunk, step: StepRecorder) -> None:
    """A provider-executed tool's result through `process_tool_result`, in place."""
    payload = chunk.payload
    if payload.get("is_error"):
        return
    payload.result = await run.runner.run_tool_result(
        payload.get("result"),
        tool_name=payload.tool_name,
        tool_call_id=payload.tool_call_id,
        tool_args=payload.get("args"),
        provider_executed=True,
        step_number=step.step_number,
        steps=run.state.steps,
        message_list=run.message_list,
    )


async def call_tool(
    run: RunCore, call: Chunk, tools: dict[str, Tool], writer: Writer, step: ToolStep
) -> Chunk:
    """One tool call, from the model's arguments to its result chunk: a failure becomes a
    `tool-error` the model sees, never the end of the run."""
    payload = call.payload
    name = payload.tool_name
    tool = tools.get(name)
    error: BaseException | None = None
    result: Any = None
    if name == MISSING_TOOL_NAME and tool is None:
        error = ToolError(f"the tool call names no tool; available tools: {sorted(tools) or 'none'}")
    elif tool is None:
        error = ToolError(f"tool {name!r} is not available; available tools: {sorted(tools) or 'none'}")
    elif isinstance(payload.args, UnparsedArgs):
        error = ToolInputError(f"invalid input for tool {name!r}: the arguments {payload.args.reason}")
    else:
        if await needs_approval(run, tool, name, payload.args, payload.tool_call_id):
            return Chunk(
                "tool-call-approval",
                run.run_id,
                Payload(tool_call_id=payload.tool_call_id, tool_name=name, args=payload.args),
            )
        tool_args = payload.args  # what the tool receives; the chunk and history keep payload.args
        if run.runner.handles_tool_call:
            try:
                tool_args = await run.runner.run_tool_call(
                    tool_args,
                    tool_name=name,
                    tool_call_id=payload.tool_call_id,
                    step_number=step.step_number,
                    steps=run.state.steps,
                    message_list=run.message_list,
                )
            except ToolCallRefused as exc:  # this call only: the model reads why, the run goes on
                return refused_call(run, call, step, exc)
        try:
            validated = run.tool_runner.validate(tool, tool_args)
            context = ToolContext(
                tool_call_id=payload.tool_call_id,
                messages=run.message_list.get.all.db(),
                request_context=run.request_context,
                writer=writer,
                tool_name=name,
                resume_data=run.state.resume_data.get(payload.tool_call_id),
                suspended_with=run.state.suspended_with.get(payload.tool_call_id),
                suspend_schema=tool.context_schema(),
                idempotency_key=f"{run.run_id}:{payload.tool_call_id}",
            )
            result = await run.tool_runner.execute(tool, validated, context)
            if context.suspended:
                return Chunk(
                    "tool-call-suspended",
                    run.run_id,
                    Payload(
                        tool_call_id=payload.tool_call_id,
                        tool_name=name,
                        args=payload.args,
                        suspend_payload=context.suspend_payload,
                    ),
                )
        except ToolInputError as exc:
            error = exc
        except SubAgentTripWire:
            raise  # the parent asked for its sub-agents' tripwires: the run ends with it
        except Exception as exc:
            log.info("tool %r failed: %s", name, error_text(exc, details=run.provider_error_details))
            error = exc
    if error is None and run.runner.handles_tool_result:
        result = await run.runner.run_tool_result(
            result,
            tool_name=name,
            tool_call_id=payload.tool_call_id,
            tool_args=payload.args,
            provider_executed=False,
            step_number=step.step_number,
            steps=run.state.steps,
            message_list=run.message_list,
        )
    invocation = step.invocation(payload.tool_call_id)
    if invocation is not None:
        invocation["state"] = "result"
        if error is not None:
            invocation["result"] = error_text(error, details=run.provider_error_details)
            invocation["isError"] = True
        else:
            invocation["result"] = result
            if tool is not None and tool.to_model_output is not None:
                invocation["modelOutput"] = tool.to_model_output(result)
    if error is not None:
        return Chunk(
            "tool-error",
            run.run_id,
            Payload(tool_call_id=payload.tool_call_id, tool_name=name, args=payload.args, error=error),
        )
    return Chunk(
        "tool-result",
        run.run_id,
        Payload(
            tool_call_id=payload.tool_call_id,
            tool_name=name,
            args=payload.args,
            result=result,
            is_error=False,
        ),
    )


def refused_call(run: RunCore, call: Chunk, step: ToolStep, refusal: ToolCallRefused) -> Chunk:
    """A call a `process_tool_call` hook refused (`args.reject`): recorded as the call's error
    result (what the model reads), sent as a `tool-output-denied` naming who refused and why."""
    payload = call.payload
    reason = str(refusal)
    invocation = step.invocation(payload.tool_call_id)
    if invocation is not None:
        invocation["state"] = "result"
        invocation["result"] = reason
        invocation["isError"] = True
    return Chunk(
        "tool-output-denied",
        run.run_id,
        Payload(
            tool_call_id=payload.tool_call_id,
            tool_name=payload.tool_name,
            args=payload.args,
            reason=reason,
            processor_id=refusal.processor_id,
        ),
    )
