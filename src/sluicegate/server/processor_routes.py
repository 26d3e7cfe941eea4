"""Processor routes: the catalogue, one processor, and running one of its phases on messages
(the studio's "try it", Mastra's `POST /api/processors/:id/execute`)."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request

from sluicegate.errors import ProcessorError, TripWire, public_text
from sluicegate.messages import MessageList
from sluicegate.processors.args import OutputResult
from sluicegate.processors.base import implements
from sluicegate.processors.runner import ProcessorRunner
from sluicegate.server.bodies import ProcessorExecuteBody, read_messages, request_context_from
from sluicegate.server.deps import ERRORS, registry_of
from sluicegate.server.errors import bad_request, not_found
from sluicegate.server.identity import bind_context
from sluicegate.server.serialize import PHASE_HOOKS, processor_detail, processor_summary
from sluicegate.stream.chunk import Chunk, text_delta
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage

router = APIRouter(prefix="/api/processors", tags=["processors"])

RUNNABLE = ("input", "outputStream", "outputStep", "outputResult")


@router.get("", responses=ERRORS)
async def list_processors(request: Request) -> dict[str, Any]:
    registry = registry_of(request)
    return {pid: processor_summary(registry, pid, p) for pid, p in registry.processors().items()}


def _processor(request: Request, pid: str) -> Any:
    processor = registry_of(request).get_processor(pid)
    if processor is None:
        raise not_found("processor", pid)
    return processor


@router.get("/{processorId}", responses=ERRORS)
async def get_processor(processorId: str, request: Request) -> dict[str, Any]:
    return processor_detail(registry_of(request), processorId, _processor(request, processorId))


async def _run_stream(
    runner: ProcessorRunner, message_list: MessageList, run_id: str
) -> list[dict[str, Any]]:
    """Play each response message's text through the stream pipeline as one text block."""
    pipeline = runner.stream_pipeline(message_list)
    emitted: list[dict[str, Any]] = []
    if pipeline is None:
        return emitted
    chunks: list[Chunk] = []
    for index, message in enumerate(message_list.get.response.db()):
        block = f"t{index}"
        chunks += [
            Chunk("text-start", run_id, Payload(id=block)),
            text_delta(run_id, block, message.text),
            Chunk("text-end", run_id, Payload(id=block)),
        ]
    chunks.append(
        Chunk("finish", run_id, Payload(step_result=Payload(reason="stop"), output=Payload(usage=Usage())))
    )
    for chunk in chunks:
        result = await pipeline(chunk)
        for out in result if isinstance(result, list) else [result]:
            if out is not None:
                emitted.append(out.to_dict())
    return emitted


@router.post("/{processorId}/execute", responses=ERRORS)
async def execute_processor(processorId: str, body: ProcessorExecuteBody, request: Request) -> dict[str, Any]:
    """Run one phase of a registered processor on the given messages: user messages are the
    input, assistant messages the response. Returns the messages afterwards, or the tripwire."""
    processor = _processor(request, processorId)
    phase = body.phase
    if phase not in RUNNABLE:
        raise bad_request("phase", f"{phase!r} needs a live run; this endpoint runs {', '.join(RUNNABLE)}")
    if not implements(processor, PHASE_HOOKS[phase]):
        raise bad_request("phase", f"processor {processorId!r} has no {PHASE_HOOKS[phase]} hook")
    messages = read_messages(body.messages) if body.messages else []
    message_list = MessageList()
    for message in messages:
        message_list.add(message, "response" if message.role == "assistant" else "input")
    run_id = str(uuid.uuid4())
    emitted: list[dict[str, Any]] = []
    is_input = phase == "input"
    runner = ProcessorRunner(
        input_processors=[processor] if is_input else [],
        output_processors=[] if is_input else [processor],
        request_context=bind_context(request, request_context_from(body.requestContext)),
        run_id=run_id,
        emit=lambda chunk: emitted.append(chunk.to_dict()),
    )
    out: dict[str, Any] = {"success": True, "phase": phase}
    try:
        if is_input:
            await runner.run_input(message_list)
        elif phase == "outputStream":
            out["chunks"] = await _run_stream(runner, message_list, run_id)
        else:
            response = message_list.get.response.db()
            text = "".join(m.text for m in response)
            if phase == "outputStep":
                await runner.run_output_step(
                    message_list,
                    step_number=0,
                    finish_reason="stop",
                    tool_calls=[],
                    text=text,
                    usage=Usage(),
                    steps=[],
                )
            else:
                await runner.run_output_result(
                    message_list, OutputResult(text=text, usage=Usage(), finish_reason="stop", steps=[])
                )
    except TripWire as tripwire:
        out.update(
            success=False,
            tripwire={"triggered": True, "reason": tripwire.reason, "metadata": tripwire.metadata},
        )
    except ProcessorError as exc:
        out.update(success=False, error=public_text(exc))
    final = [m.to_dict() for m in message_list.get.all.db()]
    out["messages"] = final
    out["messageList"] = {"messages": final}
    if emitted:
        out["dataChunks"] = emitted
    return out
