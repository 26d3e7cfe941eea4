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
from sluicegate.messages import Message
from sluicegate.messages.convert import to_prompt_messages, to_ui_messages
from sluicegate.stream.payload import to_json
from sluicegate.stream.usage import Usage

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


def model_messages(stored: list[Message]) -> list[dict[str, Any]]:
    """Stored response messages as AI SDK model messages (Mastra's `response.messages`): the
    assistant's text and calls, each step's tool results as a `tool` message (a declined call's
    reason among them), each result with its call's `input`."""
    prompt: list[dict[str, Any]] = [dict(m) for m in to_prompt_messages(stored)]
    inputs: dict[str, Any] = {}
    for message in prompt:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            kind = part.get("type")
            if kind == "text":
                part["providerOptions"] = _provider_options()
            elif kind == "tool-call":
                inputs[part["toolCallId"]] = part.get("input")
            elif kind == "tool-result":
                part["input"] = inputs.get(part["toolCallId"])
    return prompt


def prompt_echo(result: FullOutput[Any]) -> dict[str, list[dict[str, Any]]]:
    """Mastra's `messages` of `step-finish` / `finish`: the conversation as model messages
    (`all`: recalled, input and response), the input (`user`) and the response (`nonUser`)."""
    user = model_messages(result.input_messages)
    non_user = model_messages(result.response.messages)
    return {
        "all": [*model_messages(result.remembered_messages), *user, *non_user],
        "user": user,
        "nonUser": non_user,
    }


def _wrote_message(step: StepResult) -> bool:
    """Whether the step left an assistant message (a retried attempt's is taken back)."""
    return step.finish_reason != "retry" and bool(step.text or step.reasoning_text or step.tool_calls)


def step_cuts(steps: list[StepResult], stored: list[Message]) -> list[tuple[int, int]]:
    """For each step, the slice of the run's stored response messages it wrote: a step that
    said something wrote one assistant message (its tool results folded into it); a retried
    attempt wrote none that stayed."""
    cuts: list[tuple[int, int]] = []
    end = 0
    for step in steps:
        start = end
        if _wrote_message(step):
            end = min(end + 1, len(stored))
        cuts.append((start, end))
    return cuts


def content_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A step's content parts (AI SDK `StepResult.content`): its model messages' parts."""
    return [part for m in messages if isinstance(m.get("content"), list) for part in m["content"]]


def counted(steps: list[StepResult]) -> list[StepResult]:
    """The steps a result reports: retried attempts left out, as Mastra does."""
    return [s for s in steps if s.finish_reason != "retry"]


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


def usage_json(usage: Usage, raw: Usage | None = None) -> dict[str, Any]:
    """A usage as Mastra sends it: the counts, and under `raw` the model's own report for the
    (last) step, as sluicegate read it from the provider."""
    out: dict[str, Any] = usage.to_dict()
    out["raw"] = (raw if raw is not None else usage).to_dict()
    return out


def run_usage(result: FullOutput[Any]) -> dict[str, Any]:
    """The run's usage: `{}` when no model call was made (as Mastra reports it)."""
    steps = counted(result.steps)
    return usage_json(result.usage, steps[-1].usage) if steps else {}


def stream_output(result: FullOutput[Any], model: tuple[str, str]) -> dict[str, Any]:
    """`output` of a `step-finish` / `finish` event: the run's text, the last step's tool calls
    and the steps so far (each with the model messages up to it, as Mastra reports them)."""
    steps = result.steps
    stored = result.response.messages
    out_steps = []
    for step, (start, end) in zip(steps, step_cuts(steps, stored), strict=True):
        out_steps.append(
            {
                "content": content_of(model_messages(stored[start:end])),
                "usage": usage_json(step.usage),
                "warnings": to_json(step.warnings),
                "response": {
                    **response_metadata(step, model_of(step, model)),
                    "messages": model_messages(stored[:end]),
                },
            }
        )
    last = steps[-1] if steps else None
    return {
        "text": result.text,
        "toolCalls": [to_json(c.payload) for c in last.tool_calls] if last is not None else [],
        "usage": run_usage(result),
        "steps": out_steps,
    }


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
        "content": content_of(model_messages(own)),
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
