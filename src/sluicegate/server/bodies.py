"""The JSON bodies the API accepts, in Mastra's camelCase, and their mapping onto the
keyword options of `Agent.generate` / `Agent.stream`.

The models forbid unknown fields, so a typo or an option this server cannot honour is a 400
naming the field instead of being silently ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sluicegate.errors import SluicegateError
from sluicegate.messages import Message
from sluicegate.models.settings import ModelSettingsError, check_provider_options, normalize_model_settings
from sluicegate.request_context import RequestContext
from sluicegate.server.errors import bad_request
from sluicegate.server.settings import ServerSettings

RESERVED_CONTEXT_PREFIXES = ("mastra__", "sluicegate__")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ThreadRef(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1, max_length=256)


class MemoryBody(_Body):
    """Mastra's `memory` option: which thread (and resource) the call belongs to."""

    thread: str | ThreadRef = Field(description="The thread id, or `{id, ...}`.")
    resource: str | None = Field(default=None, min_length=1, max_length=256)
    options: dict[str, Any] | None = None
    readOnly: bool | None = None


class ToolChoiceTool(_Body):
    type: Literal["tool"]
    toolName: str = Field(min_length=1)


class StructuredOutputBody(_Body):
    json_schema: dict[str, Any] = Field(alias="schema", description="A JSON schema for the answer.")


class AgentCallBody(_Body):
    """Body of `POST /api/agents/{agentId}/generate` and `/stream`."""

    messages: str | list[Any] = Field(description="A string or a list of messages (model or UI shape).")
    memory: MemoryBody | None = None
    threadId: str | None = Field(
        default=None, min_length=1, max_length=256, description="Legacy form of memory.thread."
    )
    resourceId: str | None = Field(
        default=None, min_length=1, max_length=256, description="Legacy form of memory.resource."
    )
    requestContext: dict[str, Any] | None = None
    maxSteps: int | None = Field(default=None, ge=1)
    maxProcessorRetries: int | None = Field(default=None, ge=0, le=100)
    toolChoice: Literal["auto", "none", "required"] | ToolChoiceTool | None = None
    activeTools: list[str] | None = None
    modelSettings: dict[str, Any] | None = None
    providerOptions: dict[str, dict[str, Any]] | None = None
    structuredOutput: StructuredOutputBody | None = None
    instructions: str | list[str] | None = None
    system: str | list[str] | None = None
    model: str | None = None
    clientTools: dict[str, Any] | None = None
    # Observability hints a Mastra client may send; they do not change the run.
    runId: str | None = Field(default=None, max_length=256)
    savePerStep: bool | None = None
    returnScorerData: bool | None = None
    tracingOptions: dict[str, Any] | None = None


def _messages(value: str | list[Any]) -> list[Message]:
    if isinstance(value, list) and not value:
        raise bad_request("messages", "at least one message is required")
    try:
        return Message.coerce_many(value)
    except (SluicegateError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise bad_request("messages", f"unreadable message ({exc})") from None


def request_context_from(value: dict[str, Any] | None, field: str = "requestContext") -> RequestContext:
    """A `RequestContext` from the client's dict; keys the runtime reserves are refused, so a
    client cannot pose as another resource or thread."""
    context = RequestContext()
    for key, item in (value or {}).items():
        if key.startswith(RESERVED_CONTEXT_PREFIXES):
            raise bad_request(
                f"{field}.{key}", "this key is reserved; use the memory field for thread and resource"
            )
        context.set(key, item)
    return context


def call_options(body: AgentCallBody, settings: ServerSettings) -> tuple[list[Message], dict[str, Any]]:
    """The messages and the `generate`/`stream` keyword options a body asks for."""
    messages = _messages(body.messages)
    options: dict[str, Any] = {"request_context": request_context_from(body.requestContext)}
    memory = _memory(body)
    if memory is not None:
        options["memory"] = memory
    if body.maxSteps is not None:
        if body.maxSteps > settings.max_steps_limit:
            raise bad_request("maxSteps", f"must be at most {settings.max_steps_limit}")
        options["max_steps"] = body.maxSteps
    if body.maxProcessorRetries is not None:
        options["max_processor_retries"] = body.maxProcessorRetries
    if body.toolChoice is not None:
        choice = body.toolChoice
        options["tool_choice"] = (
            choice if isinstance(choice, str) else {"type": "tool", "tool_name": choice.toolName}
        )
    if body.activeTools is not None:
        options["active_tools"] = list(body.activeTools)
    try:
        if body.modelSettings is not None:
            options["model_settings"] = normalize_model_settings(body.modelSettings, where="modelSettings")
        if body.providerOptions is not None:
            check_provider_options(body.providerOptions, where="providerOptions")
            options["provider_options"] = dict(body.providerOptions)
    except ModelSettingsError as exc:
        raise bad_request(exc.field, exc.reason) from None
    if body.structuredOutput is not None:
        options["structured_output"] = {"schema": body.structuredOutput.json_schema}
    for name in ("model", "instructions", "system"):
        if getattr(body, name) is not None and not settings.allow_client_overrides:
            raise bad_request(
                name, "this server does not let clients replace the agent's model or instructions"
            )
    if body.model is not None:
        options["model"] = body.model
    if body.instructions is not None or body.system is not None:
        parts: list[str] = []
        for value in (body.instructions, body.system):
            if value is not None:
                parts.extend([value] if isinstance(value, str) else value)
        options["instructions"] = parts
    if body.clientTools:
        raise bad_request("clientTools", "client-side tools are not supported by this server")
    return messages, options


def _memory(body: AgentCallBody) -> dict[str, Any] | None:
    if body.memory is not None:
        thread = body.memory.thread
        thread_id = thread if isinstance(thread, str) else thread.id
        if not thread_id:
            raise bad_request("memory.thread", "must be a non-empty thread id")
        memory: dict[str, Any] = {"thread": thread_id}
        resource = body.memory.resource or body.resourceId
        if resource is not None:
            memory["resource"] = resource
        options = dict(body.memory.options or {})
        if body.memory.readOnly is not None:
            options["read_only"] = body.memory.readOnly
        if options:
            memory["options"] = options
        return memory
    if body.threadId is not None:
        memory = {"thread": body.threadId}
        if body.resourceId is not None:
            memory["resource"] = body.resourceId
        return memory
    if body.resourceId is not None:
        raise bad_request("resourceId", "needs threadId (or memory.thread) as well")
    return None


class CreateThreadBody(_Body):
    resourceId: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="The owner; required unless an identity hook binds the request.",
    )
    title: str | None = Field(default=None, max_length=1000)
    metadata: dict[str, Any] | None = None
    threadId: str | None = Field(default=None, min_length=1, max_length=256)
    agentId: str | None = None
    requestContext: dict[str, Any] | None = None


class UpdateThreadBody(_Body):
    title: str | None = Field(default=None, max_length=1000)
    metadata: dict[str, Any] | None = None
    resourceId: str | None = Field(default=None, min_length=1, max_length=256)


Phase = Literal["input", "inputStep", "outputStream", "outputResult", "outputStep", "toolResult"]


class ProcessorExecuteBody(_Body):
    phase: Phase
    messages: list[dict[str, Any]] = Field(max_length=1000)
    agentId: str | None = None
    requestContext: dict[str, Any] | None = None


class ToolExecuteBody(_Body):
    data: Any = None
    requestContext: dict[str, Any] | None = None
