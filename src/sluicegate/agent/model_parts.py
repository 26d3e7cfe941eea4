"""Model stream parts -> chunks: AI SDK V2 parts from a provider, or the chunks of a response
a processor replays (`process_llm_request`).

Plain text deltas do not come here: the model step converts them inline (the hot path). Bookkeeping
parts (`finish`, `stream-start`, `response-metadata`) are recorded into the step and emit
nothing.
"""

from __future__ import annotations

from typing import Any

from sluicegate.agent.step import StepRecorder, parse_args
from sluicegate.errors import APICallError
from sluicegate.ids import new_uuid
from sluicegate.messages.part import to_snake
from sluicegate.stream.chunk import Chunk, TextPayload
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage

MISSING_TOOL_NAME = "unknown-tool"
"""The name a tool call without one is recorded under (providers reject an empty name in the
history); the call itself becomes a `tool-error`."""


class ModelStreamError(Exception):
    """An `error` part inside a model stream, carried out of the chunk loop."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def convert(part: Any, step: StepRecorder, run_id: str) -> Chunk | None:
    """A model part (V2 dict) or a replayed chunk -> a chunk to emit, or None for bookkeeping."""
    if isinstance(part, Chunk):
        return replayed(part, step, run_id)
    if isinstance(part, dict) and "payload" in part and "delta" not in part:
        return replayed(Chunk.from_dict(part), step, run_id)
    kind = part.get("type")
    if kind in ("text-start", "text-end", "reasoning-start", "reasoning-end"):
        return Chunk(kind, run_id, Payload(id=part.get("id"), provider_metadata=part.get("providerMetadata")))
    if kind == "reasoning-delta":
        return Chunk(kind, run_id, TextPayload(part.get("id", ""), part.get("delta", "")))
    if kind == "tool-call":
        return Chunk(
            kind,
            run_id,
            Payload(
                tool_call_id=part.get("toolCallId") or f"call_{new_uuid().hex[:24]}",
                tool_name=_tool_name(part.get("toolName")),
                args=parse_args(part.get("input")),
                provider_executed=part.get("providerExecuted"),
                provider_metadata=part.get("providerMetadata"),
            ),
        )
    if kind == "finish":
        step.finish_reason = part.get("finishReason", "unknown")
        step.usage = Usage.from_v2(part.get("usage"))
        step.provider_metadata = part.get("providerMetadata")
        return None
    if kind == "stream-start":
        step.warnings = list(part.get("warnings") or [])
        return None
    if kind == "response-metadata":
        step.response.update({k: v for k, v in part.items() if k != "type"})
        return None
    if kind == "error":
        raw = part.get("error")
        if isinstance(raw, BaseException):
            raise ModelStreamError(raw)
        message = raw.get("message") if isinstance(raw, dict) else None
        raise ModelStreamError(APICallError(message or str(raw), data=raw))
    if kind == "tool-input-start":
        return Chunk(
            "tool-call-input-streaming-start",
            run_id,
            Payload(tool_call_id=part.get("id"), tool_name=part.get("toolName")),
        )
    if kind == "tool-input-delta":
        return Chunk(
            "tool-call-delta",
            run_id,
            Payload(tool_call_id=part.get("id"), args_text_delta=part.get("delta", "")),
        )
    if kind == "tool-input-end":
        return Chunk("tool-call-input-streaming-end", run_id, Payload(tool_call_id=part.get("id")))
    if kind == "tool-result":
        return Chunk(
            kind,
            run_id,
            Payload(
                tool_call_id=part["toolCallId"],
                tool_name=part["toolName"],
                result=part.get("result"),
                is_error=bool(part.get("isError")),
                provider_executed=True,
            ),
        )
    if kind == "file":
        return Chunk(kind, run_id, Payload(data=part.get("data"), media_type=part.get("mediaType")))
    if kind == "raw":
        return None
    return Chunk(str(kind), run_id, Payload(**{to_snake(k): v for k, v in part.items() if k != "type"}))


def replayed(chunk: Chunk, step: StepRecorder, run_id: str) -> Chunk | None:
    """A chunk of a processor's replayed response (e.g. a cached one) -> the chunk to emit."""
    if chunk.type == "finish":
        payload = chunk.payload
        step_result = payload.get("step_result")
        output = payload.get("output")
        step.finish_reason = step_result.get("reason") if step_result is not None else "stop"
        usage = output.get("usage") if output is not None else None
        step.usage = (
            usage
            if isinstance(usage, Usage)
            else Usage.from_v2(usage.to_dict() if isinstance(usage, Payload) else usage)
        )
        return None
    if chunk.type == "response-metadata":
        step.response.update(vars(chunk.payload))
        return None
    chunk.run_id = run_id
    if chunk.type == "tool-result" and not chunk.payload.get("provider_executed"):
        _replayed_tool_result(chunk, step)
    return chunk


def _replayed_tool_result(chunk: Chunk, step: StepRecorder) -> None:
    """A cached response's result of one of its own tool calls: recorded as if the tool had
    just returned it, and the tool is not run again (its side effects must not repeat)."""
    call_id = chunk.payload.get("tool_call_id")
    invocation = step.invocation(call_id) if isinstance(call_id, str) else None
    if invocation is None:
        return
    step.replayed_results[call_id] = chunk
    invocation["state"] = "result"
    invocation["result"] = chunk.payload.get("result")


def _tool_name(name: Any) -> str:
    return name if isinstance(name, str) and name else MISSING_TOOL_NAME
