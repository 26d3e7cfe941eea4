"""A `generate` result's steps in the shape Mastra's server sends them (`stepType`, content,
model messages, stored and UI messages up to each step), and the `resumeSchema` of an approval.

The stream's `step-finish` / `finish` carry the same run summary, built by the agent
(`agent/run_summary.py`)."""

from __future__ import annotations

import json
from typing import Any

from sluicegate.agent.results import FullOutput, StepResult
from sluicegate.agent.run_summary import (
    content_of,
    counted,
    model_messages,
    model_metadata,
    model_of,
    run_usage,
    step_cuts,
    usage_json,
)
from sluicegate.messages import Message
from sluicegate.messages.convert import to_ui_messages
from sluicegate.stream.payload import to_json

__all__ = ["APPROVAL_RESUME_SCHEMA", "counted", "generate_steps", "model_metadata", "model_of", "run_usage"]

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


def step_type(index: int, steps: list[StepResult]) -> str:
    """AI SDK's `stepType`: the first step is `initial`, one after tool results `tool-result`."""
    if index == 0:
        return "initial"
    return "tool-result" if steps[index - 1].tool_results else "continue"


def generate_steps(
    result: FullOutput[Any], model: tuple[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A `generate` body's `steps`, and its `response.messages`."""
    steps = result.steps
    stored = result.response.messages
    out = []
    for index, (start, end) in enumerate(step_cuts(steps, stored)):
        out.append(_generate_step(index, steps, model, stored[start:end], stored[:end]))
    return out, model_messages(stored)


def _generate_step(
    index: int, steps: list[StepResult], model: tuple[str, str], own: list[Message], so_far: list[Message]
) -> dict[str, Any]:
    step = steps[index]
    provider, model_id = model_of(step, model)
    out: dict[str, Any] = {
        "stepType": step_type(index, steps),
        "sources": [],
        "files": [],
        "toolCalls": [c.to_dict() for c in step.tool_calls],
        "toolResults": [c.to_dict() for c in step.tool_results],
        "content": content_of([m for m in model_messages(own) if m["role"] != "user"]),
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
            "messages": model_messages(so_far),
            "dbMessages": [m.to_dict() for m in so_far],
            "uiMessages": to_ui_messages(so_far),
        },
    }
    if step.tripwire is not None:
        out["tripwire"] = step.tripwire.to_dict()
    return out
