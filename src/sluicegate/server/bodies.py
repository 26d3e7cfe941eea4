"""The JSON bodies the API accepts, in Mastra's camelCase, and their mapping onto the
keyword options of `Agent.generate` / `Agent.stream`.

The models forbid unknown fields, so a typo or an option this server cannot honour is a 400
naming the field instead of being silently ignored; and every body is plain JSON
(`sluicegate.server.plain_json`) before a route sees it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sluicegate.agent import Agent
from sluicegate.agent.decisions import MAX_DECLINE_REASON_CHARS
from sluicegate.errors import SluicegateError
from sluicegate.memory.errors import MemoryOptionError
from sluicegate.messages import Message
from sluicegate.messages.validate import validate_input
from sluicegate.models.settings import ModelSettingsError, check_provider_options, normalize_model_settings
from sluicegate.processors.memory import Memory
from sluicegate.processors.memory_narrowing import narrow
from sluicegate.request_context import RequestContext
from sluicegate.server.errors import bad_request
from sluicegate.server.plain_json import check_plain_json
from sluicegate.server.settings import ServerSettings

RESERVED_CONTEXT_PREFIXES = ("mastra__", "sluicegate__")
NO_OVERRIDES = "this server does not let clients replace the agent's model or instructions"
NO_CLIENT_SYSTEM = (
    "a system message from a client would override the agent's instructions: "
    "this server refuses it (start it with --allow-client-overrides to accept one)"
)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _plain_json(cls, data: Any) -> Any:
        """Every body, whatever its fields: no lone surrogate, NaN or Infinity anywhere."""
        return check_plain_json(data)


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


class _RunTuning(_Body):
    """The options that tune a run, shared by starting one and resuming one."""

    requestContext: dict[str, Any] | None = None
    maxSteps: int | None = Field(default=None, ge=1)
    maxProcessorRetries: int | None = Field(default=None, ge=0, le=100)
    toolChoice: Literal["auto", "none", "required"] | ToolChoiceTool | None = None
    activeTools: list[str] | None = None
    modelSettings: dict[str, Any] | None = None
    providerOptions: dict[str, dict[str, Any]] | None = None
    model: str | None = None
    requireToolApproval: bool | None = Field(
        default=None, description="Every tool call waits for approve-tool-call / decline-tool-call."
    )
    # Observability hints a Mastra client may send; they do not change the run.
    savePerStep: bool | None = None
    returnScorerData: bool | None = None
    tracingOptions: dict[str, Any] | None = None


class UntilIdle(_Body):
    maxIdleMs: int | None = Field(default=None, gt=0)


class AgentCallBody(_RunTuning):
    """Body of `POST /api/agents/{agentId}/generate` and `/stream`: every field of Mastra's
    `agentExecutionBodySchema`. Those naming something this server does not have (`context`,
    `versions`, `toolsets`, `scorers`, `stopWhen`, `clientTools`) are refused when they ask for
    anything; a field Mastra does not know is a 400 as before."""

    messages: str | list[Any] = Field(description="A string or a list of messages (model or UI shape).")
    memory: MemoryBody | None = None
    threadId: str | None = Field(
        default=None, min_length=1, max_length=256, description="Legacy form of memory.thread."
    )
    resourceId: str | None = Field(
        default=None, min_length=1, max_length=256, description="Legacy form of memory.resource."
    )
    structuredOutput: StructuredOutputBody | None = None
    instructions: str | list[str] | None = None
    system: str | list[str] | None = None
    clientTools: dict[str, Any] | None = None
    runId: str | None = Field(default=None, max_length=256, description="An observability hint; ignored.")
    untilIdle: bool | UntilIdle | None = Field(
        default=None,
        description="Stream until the agent is idle. A run here has no background work that outlives "
        "it, so its stream ends exactly when the agent is idle: always honoured.",
    )
    output: dict[str, Any] | None = Field(
        default=None, description="Mastra's older name for structuredOutput.schema."
    )
    context: list[Any] | None = None
    versions: dict[str, Any] | None = None
    toolsets: dict[str, Any] | None = None
    scorers: dict[str, Any] | None = None
    stopWhen: Any = None


_ABSENT = {
    "context": "context messages are not supported by this server; put them in messages",
    "versions": "agent versions are not supported by this server",
    "toolsets": "toolsets are not supported by this server; the agent's own tools run",
    "scorers": "scorers are not supported by this server",
    "stopWhen": "stopWhen conditions cannot be sent over HTTP; use maxSteps",
}
"""Mastra's fields for features sluicegate does not have, and why a request using one fails."""


def _messages(value: str | list[Any]) -> list[Message]:
    if isinstance(value, list) and not value:
        raise bad_request("messages", "at least one message is required")
    return read_messages(value)


def read_messages(value: str | list[Any]) -> list[Message]:
    """The messages, checked as `Agent.generate` checks its input (ids, dates, parts, text):
    a 400 naming the message and field at fault."""
    try:
        return validate_input(value)
    except (SluicegateError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise bad_request("messages", f"unreadable message ({exc})") from None


def refuse_client_system(roles: list[Any], settings: ServerSettings, field: str) -> None:
    """A client's system (or developer) message replaces the agent's instructions as surely as
    the `instructions` field does, so it needs the same `allow_client_overrides`: a 400 naming
    `<field>.<index>.role` otherwise. Mastra passes such a message through; here it fails closed,
    the same on every route and protocol."""
    if settings.allow_client_overrides:
        return
    for index, role in enumerate(roles):
        if role in ("system", "developer"):
            raise bad_request(f"{field}.{index}.role", NO_CLIENT_SYSTEM)


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
    refuse_client_system([message.role for message in messages], settings, "messages")
    options = tuning_options(body, settings)
    memory = _memory(body)
    if memory is not None:
        options["memory"] = memory
    if body.structuredOutput is not None and body.output is not None:
        raise bad_request("output", "give structuredOutput or output, not both")
    if body.structuredOutput is not None:
        options["structured_output"] = {"schema": body.structuredOutput.json_schema}
    elif body.output is not None:
        options["structured_output"] = {"schema": body.output}
    for name, reason in _ABSENT.items():
        if getattr(body, name):
            raise bad_request(name, reason)
    for name in ("instructions", "system"):
        if getattr(body, name) is not None and not settings.allow_client_overrides:
            raise bad_request(name, NO_OVERRIDES)
    if body.instructions is not None or body.system is not None:
        parts: list[str] = []
        for value in (body.instructions, body.system):
            if value is not None:
                parts.extend([value] if isinstance(value, str) else value)
        options["instructions"] = parts
    if body.clientTools:
        raise bad_request("clientTools", "client-side tools are not supported by this server")
    return messages, options


def tuning_options(body: _RunTuning, settings: ServerSettings) -> dict[str, Any]:
    """The keyword options of the run-tuning fields a body sets (and its request context)."""
    options: dict[str, Any] = {"request_context": request_context_from(body.requestContext)}
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
    if body.requireToolApproval is not None:
        options["require_tool_approval"] = body.requireToolApproval
    try:
        if body.modelSettings is not None:
            settings_given = dict(body.modelSettings)
            if "maxRetries" in settings_given:
                options["max_retries"] = _retries(settings_given.pop("maxRetries"))
            options["model_settings"] = normalize_model_settings(settings_given, where="modelSettings")
        if body.providerOptions is not None:
            check_provider_options(body.providerOptions, where="providerOptions")
            options["provider_options"] = dict(body.providerOptions)
    except ModelSettingsError as exc:
        raise bad_request(exc.field, exc.reason) from None
    if body.model is not None:
        if not settings.allow_client_overrides:
            raise bad_request("model", NO_OVERRIDES)
        options["model"] = body.model
    return options


def _retries(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise bad_request("modelSettings.maxRetries", "must be a non-negative integer")
    return value


def narrow_retries(agent: Agent, options: dict[str, Any]) -> None:
    """`modelSettings.maxRetries` is the provider retries of the run (the agent's
    `max_retries`); a request may lower it, never raise it above the agent's: each retry is a
    paid call the application did not budget for."""
    asked = options.get("max_retries")
    if asked is not None and asked > agent.max_retries:
        raise bad_request(
            "modelSettings.maxRetries", f"must be at most {agent.max_retries} (the agent's max_retries)"
        )


MEMORY_IGNORED = "this agent has no memory: the memory option was ignored and nothing is stored"


def drop_memory_without_memory(agent: Agent, options: dict[str, Any]) -> str | None:
    """Mastra's Studio sends `memory` for every agent; for one without memory the option is
    dropped (a body never turns memory on) and the warning to send is returned."""
    if agent.memory is None and options.pop("memory", None) is not None:
        return MEMORY_IGNORED
    return None


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


def narrow_memory_options(agent: Agent, body: AgentCallBody, options: dict[str, Any]) -> None:
    """Replace the call's memory options with the agent's configured ones narrowed by the body:
    a request may turn memory features off or make them smaller, never widen them (400 naming
    the option otherwise; see `sluicegate.processors.memory_narrowing`)."""
    memory = options.get("memory")
    overrides = memory.get("options") if memory is not None else None
    if memory is None or overrides is None or agent.memory is None:
        return  # no memory on the agent: the run refuses `memory` itself
    if not isinstance(agent.memory, Memory):  # cannot tell narrowing from widening: refuse
        raise bad_request("memory.options", "this agent's memory takes no per-request options")
    try:
        memory["options"] = narrow(agent.memory.options, overrides)
    except MemoryOptionError as exc:
        field = f"memory.options.{exc.option}"
        if exc.option == "read_only" and body.memory is not None and body.memory.readOnly is not None:
            field = "memory.readOnly"
        raise bad_request(field, exc.reason) from None


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


# ----------------------------------------------------------------------------- human in the loop

MAX_RUN_ID_CHARS = 1024
"""The longest run or tool call id accepted (the suspended-run stores' limit)."""

_ID_PATTERN = r"^[^\x00-\x1f\x7f]+$"  # no control characters: every store can keep it


def _run_id(description: str) -> Any:
    return Field(min_length=1, max_length=MAX_RUN_ID_CHARS, pattern=_ID_PATTERN, description=description)


def _tool_call_id() -> Any:
    return Field(
        default=None,
        min_length=1,
        max_length=MAX_RUN_ID_CHARS,
        pattern=_ID_PATTERN,
        description="The pending call to decide; may be left out when the run waits on one call only.",
    )


def _resource_id() -> Any:
    return Field(
        default=None,
        min_length=1,
        max_length=256,
        description="Whose run (without an identity hook; with one, the authenticated resource).",
    )


class ToolDecisionBody(_Body):
    """Body of `approve-tool-call` and `approve-tool-call-generate`."""

    runId: str = _run_id("The suspended run (the `runId` of its chunks and result).")
    toolCallId: str | None = _tool_call_id()
    resourceId: str | None = _resource_id()
    requestContext: dict[str, Any] | None = None
    model: str | None = None
    format: Literal["mastra"] | None = Field(default=None, description="Only Mastra's chunks are served.")


class DeclineBody(ToolDecisionBody):
    """Body of `decline-tool-call` and `decline-tool-call-generate`."""

    reason: str | None = Field(
        default=None,
        max_length=MAX_DECLINE_REASON_CHARS,
        description="What the model is told instead of the tool's result.",
    )


class ResumeStreamBody(_RunTuning):
    """Body of `resume-stream`: the data a suspended tool resumes with, and run options. The
    conversation, memory and instructions are the stored run's: fields that would change them are
    refused."""

    runId: str = _run_id("The suspended run.")
    toolCallId: str | None = _tool_call_id()
    resumeData: Any = Field(description="Checked against the tool's resume schema.")
    resourceId: str | None = _resource_id()
    memory: MemoryBody | None = Field(
        default=None, description="As Mastra's clients send it: must name the run's own thread and resource."
    )
    threadId: str | None = Field(default=None, min_length=1, max_length=256)


class ObserveBody(_Body):
    """Body of `observe`: which run to replay, from which chunk."""

    runId: str = _run_id("The run to observe.")
    offset: int = Field(
        default=0,
        ge=0,
        le=2**53,
        strict=True,
        description="How many chunks the client already has (0: replay all).",
    )
    resourceId: str | None = _resource_id()
