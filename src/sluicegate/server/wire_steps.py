"""A run's steps in the shapes Mastra's server sends them: AI SDK model messages, step content,
model metadata and step results, as `finish`, `step-finish` and `generate` bodies carry them.

Built from a run's `FullOutput` (`ModelOutput.snapshot()` while streaming), once per step or
run, never per chunk.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from sluicegate.agent.results import FullOutput, StepResult
from sluicegate.stream.payload import to_json

MODEL_VERSION = "v2"

APPROVAL_RESUME_SCHEMA = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "approved": {
                "description": "Whether the tool call is approved (false: declined)",
                "type": "boolean",
            },
            "reason": {"description": "Why, shown to the model when the call is declined", "type": "string"},
        },
        "required": ["approved"],
        "additionalProperties": False,
    },
    separators=(",", ":"),
)
"""What `approve-tool-call` / `decline-tool-call` take, as Mastra's `resumeSchema` string."""


def now_ms() -> int:
    return int(time.time() * 1000)


def _provider_options() -> dict[str, Any]:
    return {"mastra": {"createdAt": now_ms()}}


def tool_output(result: Any) -> dict[str, Any]:
    """A tool's result as the AI SDK hands it back to the model: text for a string, else JSON."""
    value = to_json(result)
    return {"type": "text", "value": value} if isinstance(value, str) else {"type": "json", "value": value}


def _call_part(call: Any) -> dict[str, Any]:
    p = call.payload
    return {
        "type": "tool-call",
        "toolCallId": p.tool_call_id,
        "toolName": p.tool_name,
        "input": to_json(p.args),
    }


def _result_part(result: Any) -> dict[str, Any]:
    p = result.payload
    return {
        "type": "tool-result",
        "toolCallId": p.tool_call_id,
        "toolName": p.tool_name,
        "output": tool_output(p.get("result")),
        "input": to_json(p.get("args")),
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "providerOptions": _provider_options()}


def step_content(step: StepResult) -> list[dict[str, Any]]:
    """The step's content parts (AI SDK `StepResult.content`): text, tool calls, tool results."""
    parts: list[dict[str, Any]] = [_text_part(step.text)] if step.text else []
    parts += [_call_part(c) for c in step.tool_calls]
    parts += [_result_part(r) for r in step.tool_results]
    return parts


def step_messages(step: StepResult) -> list[dict[str, Any]]:
    """The model messages one step added: the assistant's text and calls, then its tool results
    as a `tool` message."""
    assistant = ([_text_part(step.text)] if step.text else []) + [_call_part(c) for c in step.tool_calls]
    out: list[dict[str, Any]] = [{"role": "assistant", "content": assistant}] if assistant else []
    if step.tool_results:
        out.append({"role": "tool", "content": [_result_part(r) for r in step.tool_results]})
    return out


def counted(steps: list[StepResult]) -> list[StepResult]:
    """The steps a result reports: retried attempts left out, as Mastra does."""
    return [s for s in steps if s.finish_reason != "retry"]


def model_messages(steps: list[StepResult]) -> list[dict[str, Any]]:
    return [m for s in counted(steps) for m in step_messages(s)]


def model_of(step: StepResult | None, fallback: tuple[str, str]) -> tuple[str, str]:
    """(provider, model id) of the model that served `step` (its `provider/model_id` label)."""
    if step is not None and "/" in step.model:
        provider, _, model_id = step.model.partition("/")
        return provider, model_id
    return fallback


def model_metadata(provider: str, model_id: str) -> dict[str, str]:
    return {"modelId": model_id, "modelVersion": MODEL_VERSION, "modelProvider": provider}


def response_metadata(step: StepResult | None, model: tuple[str, str]) -> dict[str, Any]:
    """`{id, timestamp, modelId, modelVersion, modelProvider}` of a model response: the
    provider's own id and time when it sent them."""
    provider, model_id = model
    response = step.response if step is not None else {}
    timestamp = response.get("timestamp")
    return {
        "id": str(response.get("id") or uuid.uuid4()),
        "timestamp": to_json(timestamp) if timestamp is not None else datetime.now(UTC).isoformat(),
        **model_metadata(provider, model_id),
    }


def usage_json(step_or_usage: Any) -> dict[str, Any]:
    usage: dict[str, Any] = step_or_usage.to_dict()
    return usage


def stream_step(step: StepResult, model: tuple[str, str], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One entry of a `finish` / `step-finish` event's `output.steps`."""
    return {
        "content": step_content(step),
        "usage": usage_json(step.usage),
        "warnings": to_json(step.warnings),
        "response": {**response_metadata(step, model_of(step, model)), "messages": messages},
    }


def stream_output(result: FullOutput[Any], model: tuple[str, str]) -> dict[str, Any]:
    """`output` of a `step-finish` / `finish` event: the run's text, tool calls and steps so far
    (each step with the model messages up to it, as Mastra reports them)."""
    steps = counted(result.steps)
    so_far: list[dict[str, Any]] = []
    out_steps = []
    for step in steps:
        so_far = [*so_far, *step_messages(step)]
        out_steps.append(stream_step(step, model, so_far))
    return {
        "text": result.text,
        "toolCalls": [c.to_dict() for c in result.tool_calls],
        "usage": usage_json(result.usage),
        "steps": out_steps,
    }


def step_type(index: int, steps: list[StepResult]) -> str:
    """AI SDK's `stepType`: the first step is `initial`, one after tool results `tool-result`."""
    if index == 0:
        return "initial"
    return "tool-result" if steps[index - 1].tool_results else "continue"


def generate_step(
    index: int, steps: list[StepResult], model: tuple[str, str], messages: list[dict[str, Any]]
) -> dict[str, Any]:
    """One entry of a `generate` body's `steps`."""
    step = steps[index]
    provider, model_id = model_of(step, model)
    calls = [c.to_dict() for c in step.tool_calls]
    results = [c.to_dict() for c in step.tool_results]
    out: dict[str, Any] = {
        "stepType": step_type(index, steps),
        "sources": [],
        "files": [],
        "toolCalls": calls,
        "toolResults": results,
        "content": step_content(step),
        "text": step.text,
        "reasoningText": step.reasoning_text,
        "reasoning": [{"type": "reasoning", "text": step.reasoning_text}] if step.reasoning_text else [],
        "staticToolCalls": [],
        "dynamicToolCalls": [],
        "staticToolResults": [],
        "dynamicToolResults": [],
        "finishReason": step.finish_reason,
        "usage": usage_json(step.usage),
        "warnings": to_json(step.warnings),
        "request": {},
        "response": {
            "modelId": model_id,
            "modelMetadata": model_metadata(provider, model_id),
            "messages": messages,
        },
    }
    if step.tripwire is not None:
        out["tripwire"] = step.tripwire.to_dict()
    return out
