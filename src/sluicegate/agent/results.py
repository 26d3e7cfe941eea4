"""What a run produces: per-step results and the `FullOutput` of `generate`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic

from sluicegate.agent.options import Out
from sluicegate.messages import Message
from sluicegate.stream.kinds import ToolCallChunk, ToolErrorChunk, ToolResultChunk
from sluicegate.stream.usage import Usage


@dataclass
class StepResult:
    """One model call of the loop, as the steps list reports it."""

    step_number: int
    text: str = ""
    reasoning_text: str = ""
    tool_calls: list[ToolCallChunk] = field(default_factory=list)
    tool_results: list[ToolResultChunk] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    warnings: list[Any] = field(default_factory=list)
    response: dict[str, Any] = field(default_factory=dict)
    from_cache: bool = False
    tool_errors: list[ToolErrorChunk] = field(default_factory=list)
    """The step's failed tool calls (`tool-error` chunks: `error`, `tool_name`, `args`); as in
    Mastra, `tool_results` holds only the calls that succeeded."""
    model: str = ""
    """`provider/model_id` of the model that served the step (with fallback models, the one
    that answered)."""
    tripwire: Tripwire | None = None
    """Why `process_output_step` rejected the step with `abort(retry=True)` (its `retry` step);
    None for an accepted step and for a step retried after an API error (no processor
    aborted it)."""

    @property
    def toolCalls(self) -> list[ToolCallChunk]:
        return self.tool_calls


@dataclass
class Tripwire:
    """Why a processor stopped the run."""

    reason: str
    retry: bool = False
    metadata: Any = None
    processor_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "retry": self.retry,
            "metadata": self.metadata,
            "processorId": self.processor_id,
        }


@dataclass
class Response:
    """The messages the run produced: stored (`messages`) and UI (`ui_messages`) shapes."""

    messages: list[Message] = field(default_factory=list)
    ui_messages: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class FullOutput(Generic[Out]):
    """The result of `Agent.generate`; `object` is the structured output (a `structured_output`
    pydantic model instance, a dict for a JSON-schema dict, None without a schema)."""

    text: str
    finish_reason: str | None
    usage: Usage
    steps: list[StepResult]
    tool_calls: list[ToolCallChunk]
    tool_results: list[ToolResultChunk]
    tripwire: Tripwire | None = None
    response: Response = field(default_factory=Response)
    object: Out = None  # type: ignore[assignment]
    error: BaseException | None = None
    run_id: str = ""
    reasoning_text: str = ""
    trace_id: str = ""
    """The run's OpenTelemetry trace id (32 hex chars), or "" when the run was not traced."""
    tool_errors: list[ToolErrorChunk] = field(default_factory=list)
    """Every failed tool call of the run (`tool-error` chunks), in order."""
    steps_exhausted: bool = False
    """True when the run ended because it reached `max_steps` while the model still wanted
    tools: the tools ran but the model never answered with their results, so `text` is what it
    said before (often ""), and `finish_reason` is `"tool-calls"`. Logged at WARNING too."""
    input_messages: list[Message] = field(default_factory=list)
    """This call's input messages, as stored (Mastra's `messages` holds them before the
    response's)."""
    remembered_messages: list[Message] = field(default_factory=list)
    """The messages memory recalled into the prompt (Mastra's `rememberedMessages`)."""
    suspend_payload: Any = None
    """A suspended run (`finish_reason == "suspended"`): the tool call it waits on
    (`tool_call_id`, `tool_name`, `args`, and the tool's own `suspend_payload`, None for an
    approval); None otherwise."""
