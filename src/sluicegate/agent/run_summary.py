"""What Mastra's `step-finish` and `finish` chunks say about the run so far: its text, the step's
tool calls, each step's content and model messages, the model's metadata, the response, and the
conversation as model messages (`messages.{all, user, nonUser}`).

Built from the run's state when such a chunk is made, a step at a time (`RunSummary`): once per
step and once per run, never per chunk. The values are JSON-ready (camelCase keys), so the run
log, `observe` and durable runs carry them as the stream did; `generate` bodies
(`server/wire_steps.py`) reuse the same conversions.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from sluicegate.agent.results import FullOutput, StepResult
from sluicegate.clock import utc_now
from sluicegate.ids import new_uuid
from sluicegate.messages import Message
from sluicegate.messages.convert import to_prompt_messages
from sluicegate.stream.payload import Payload, to_json
from sluicegate.stream.usage import Usage

if TYPE_CHECKING:
    from sluicegate.agent.run_core import RunCore

MODEL_VERSION = "v2"


def _text_times(message: Message) -> list[Any]:
    """The `createdAt` of each text part the prompt conversion keeps, in order."""
    keep_empty = message.role == "user"
    return [
        p.get("createdAt")
        for p in message.content.parts
        if p.get("type") == "text" and (keep_empty or p.get("text"))
    ]


def model_messages(stored: list[Message]) -> list[dict[str, Any]]:
    """Stored response messages as AI SDK model messages (Mastra's `response.messages`): the
    assistant's text and calls, each step's tool results as a `tool` message (a declined call's
    reason among them), each result with its call's `input`; a text part's
    `providerOptions.mastra.createdAt` is its stored part's (else its message's) time."""
    prompt: list[dict[str, Any]] = []
    inputs: dict[str, Any] = {}
    for message in stored:
        times = iter(_text_times(message))
        fallback = int(message.created_at.timestamp() * 1000)
        for converted in to_prompt_messages([message]):
            converted = dict(converted)
            prompt.append(converted)
            content = converted.get("content")
            if not isinstance(content, list):
                continue
            for part in content:
                kind = part.get("type")
                if kind == "text":
                    created = next(times, None)
                    dated = fallback if isinstance(created, bool) or not isinstance(created, int) else created
                    part["providerOptions"] = {"mastra": {"createdAt": dated}}
                elif kind == "tool-call":
                    inputs[part["toolCallId"]] = part.get("input")
                elif kind == "tool-result":
                    part["input"] = inputs.get(part["toolCallId"])
    return prompt


def _wrote_message(step: StepResult) -> bool:
    """Whether the step left an assistant message (a retried attempt's is taken back)."""
    return step.finish_reason != "retry" and bool(step.text or step.reasoning_text or step.tool_calls)


def _advance(stored: list[Message], end: int, step: StepResult) -> int:
    """Where the step's stored messages end, given where they start: through its assistant
    message (with the user feedback of a structured-output retry before it), if it wrote one."""
    if not _wrote_message(step):
        return end
    while end < len(stored) and stored[end].role != "assistant":
        end += 1
    return min(end + 1, len(stored))


def step_cuts(steps: list[StepResult], stored: list[Message]) -> list[tuple[int, int]]:
    """For each step, the slice of the run's stored response messages it wrote (its tool results
    are folded into its assistant message); a retried attempt wrote none that stayed."""
    cuts: list[tuple[int, int]] = []
    end = 0
    for step in steps:
        start, end = end, _advance(stored, end, step)
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


def response_metadata(
    step: StepResult | None, model: tuple[str, str], fallback_id: str = "", now: str | None = None
) -> dict[str, Any]:
    """`{id, timestamp, modelId, modelVersion, modelProvider}` of a model response: the
    provider's own id and time when it sent them (else `fallback_id` and `now`)."""
    provider, model_id = model
    response = step.response if step is not None else {}
    timestamp = response.get("timestamp")
    return {
        "id": str(response.get("id") or fallback_id or new_uuid()),
        "timestamp": to_json(timestamp) if timestamp is not None else (now or utc_now().isoformat()),
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


class RunSummary:
    """One run's steps as Mastra's `output.steps` lists them, built a step at a time (each
    `step-finish` adds the steps since the last; `finish` adds none), so a run of n steps
    converts each stored message once, not n times."""

    __slots__ = ("_next_message", "messages", "prompt", "seen", "steps")

    def __init__(self) -> None:
        self.prompt: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
        """The input and the recalled messages as model messages, read at the first step's end
        (input processors have run by then)."""
        self.steps: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        """The response's model messages so far (`response.messages`)."""
        self.seen = 0
        self._next_message = 0

    def update(self, run: RunCore, model: tuple[str, str], now: str) -> None:
        steps = run.state.steps
        if self.seen == len(steps):
            return
        stored = run.message_list.get.response.db()
        for step in steps[self.seen :]:
            start = self._next_message
            end = _advance(stored, start, step)
            own = model_messages(stored[start:end])
            self.messages = [*self.messages, *own]
            self._next_message = end
            self.steps.append(
                {
                    "content": content_of([m for m in own if m["role"] != "user"]),
                    "usage": usage_json(step.usage),
                    "warnings": to_json(step.warnings),
                    "response": {
                        **response_metadata(step, model_of(step, model), run.message_id, now),
                        "messages": self.messages,
                    },
                }
            )
        self.seen = len(steps)


_summaries: weakref.WeakKeyDictionary[Any, RunSummary] = weakref.WeakKeyDictionary()


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
    summary = _summaries.get(run)
    if summary is None:
        summary = _summaries[run] = RunSummary()
    model = _model(run)
    now = utc_now().isoformat()
    summary.update(run, model, now)
    steps = run.state.steps
    last = steps[-1] if steps else None
    meta = response_metadata(last, model_of(last, model), run.message_id, now)
    snake = _snake(meta)
    metadata = _child(payload, "metadata")  # a step's keeps what its model sent and `model`
    for name, value in snake.items():
        if metadata.get(name) is None:
            setattr(metadata, name, value)
    if metadata.get("model_metadata") is None:
        _put(metadata, model_metadata=_model_metadata(meta))
    if summary.prompt is None:
        summary.prompt = (
            model_messages(run.message_list.get.input.db()),
            model_messages(run.message_list.get.remembered.db()),
        )
    user, recalled = summary.prompt
    _put(
        payload,
        message_id=run.message_id,
        messages={"all": [*recalled, *user, *summary.messages], "user": user, "nonUser": summary.messages},
        processor_retry_count=run.runner.retry_count,
    )
    output = _child(payload, "output")
    _put(
        output,
        text=run.final_text(),
        tool_calls=[to_json(c.payload) for c in last.tool_calls] if last is not None else [],
        steps=list(summary.steps),  # the chunk keeps what was so at its step (the log holds it)
    )
    if not final:
        return
    if run.object is not None:
        _put(output, object=to_json(run.object))
    response = _child(payload, "response")
    _put(response, **snake)
    _put(response, model_metadata=_model_metadata(meta), messages=summary.messages)


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
