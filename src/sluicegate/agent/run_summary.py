"""What Mastra's `step-finish` and `finish` chunks say about the run so far: its text, the step's
tool calls, each step's content and model messages, the model's metadata, the response, and the
conversation as model messages (`messages.{all, user, nonUser}`).

Built from the run's results (`RunCore.full_output()`) when such a chunk is made: once per step
and once per run, never per chunk. The values are JSON-ready (camelCase keys), so the run log,
`observe` and durable runs carry them as the stream did.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sluicegate.agent.results import FullOutput, StepResult
from sluicegate.messages import Message
from sluicegate.messages.convert import to_prompt_messages
from sluicegate.stream.payload import Payload, to_json
from sluicegate.stream.usage import Usage

if TYPE_CHECKING:
    from sluicegate.agent.run_core import RunCore

MODEL_VERSION = "v2"


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


def _model(run: RunCore) -> tuple[str, str]:
    model = run.model
    return str(getattr(model, "provider", "")), str(getattr(model, "model_id", ""))


def _steps_json(result: FullOutput[Any], model: tuple[str, str]) -> list[dict[str, Any]]:
    """`output.steps`: each step's content, usage and response, with the model messages up to it."""
    stored = result.response.messages
    out = []
    for step, (start, end) in zip(result.steps, step_cuts(result.steps, stored), strict=True):
        out.append(
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
    return out


def _put(payload: Payload, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(payload, name, value)


def _child(payload: Payload, name: str) -> Payload:
    child = payload.get(name)
    if not isinstance(child, Payload):
        child = Payload()
        setattr(payload, name, child)
    return child


def summarize(payload: Payload, run: RunCore, *, final: bool) -> None:
    """Add the run so far to a `step-finish` (or, `final`, a `finish`) chunk's payload:
    `message_id`, `metadata`, `messages`, `processor_retry_count`, `output.{text, tool_calls,
    steps}` and, on `finish`, `output.object` and `response.{id, timestamp, model…, messages}`."""
    result = run.full_output()
    model = _model(run)
    last = result.steps[-1] if result.steps else None
    meta = response_metadata(last, model_of(last, model))
    metadata = _child(payload, "metadata")  # a step's keeps what its model sent and `model`
    for name, value in (*_snake(meta).items(), ("model_metadata", _model_metadata(meta))):
        if metadata.get(name) is None:
            setattr(metadata, name, value)
    _put(
        payload,
        message_id=run.message_id,
        messages=prompt_echo(result),
        processor_retry_count=run.runner.retry_count,
    )
    output = _child(payload, "output")
    _put(
        output,
        text=result.text,
        tool_calls=[to_json(c.payload) for c in last.tool_calls] if last is not None else [],
        steps=_steps_json(result, model),
    )
    if not final:
        return
    if result.object is not None:
        _put(output, object=to_json(result.object))
    response = _child(payload, "response")
    _put(response, **_snake(meta))
    _put(response, model_metadata=_model_metadata(meta), messages=model_messages(result.response.messages))


def _snake(meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": meta["id"],
        "timestamp": meta["timestamp"],
        "model_id": meta["modelId"],
        "model_version": meta["modelVersion"],
        "model_provider": meta["modelProvider"],
    }


def _model_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    return {key: meta[key] for key in ("modelId", "modelVersion", "modelProvider")}
