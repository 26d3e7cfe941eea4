"""The argument and result types of the processor hooks.

Each hook takes one args object. Fields are attributes (snake_case); the objects are mutable
so the runner can reuse one per processor on the per-chunk path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from sluicegate.errors import ToolCallRefused
from sluicegate.request_context import RequestContext

if TYPE_CHECKING:
    from sluicegate.messages import Message, MessageList
    from sluicegate.stream.chunk import Chunk
    from sluicegate.stream.usage import Usage

SystemMessage = dict[str, Any]


class AbortFn(Protocol):
    """`abort(reason=None, *, retry=False, metadata=None)`: raises `TripWire`, never returns."""

    def __call__(
        self, reason: str | None = None, *, retry: bool = False, metadata: Any = None
    ) -> NoReturn: ...


class Writer(Protocol):
    """Emits custom `data-*` chunks into the output stream."""

    async def custom(self, chunk: dict[str, Any]) -> None: ...


SendSignal = Callable[[dict[str, Any]], Awaitable[None]]
GuardInput = Callable[["list[Message]"], Awaitable["list[Message]"]]


@dataclass(slots=True)
class _Common:
    abort: AbortFn
    request_context: RequestContext
    retry_count: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    tracing_context: Any = None
    writer: Writer | None = None
    processor_index: int | None = None
    """This processor's position in its array for this request."""


@dataclass(slots=True)
class ProcessInputArgs(_Common):
    messages: list[Message] = field(default_factory=list)
    system_messages: list[SystemMessage] = field(default_factory=list)
    message_list: MessageList = None  # type: ignore[assignment]
    send_signal: SendSignal | None = None


@dataclass(slots=True)
class ProcessInputStepArgs(ProcessInputArgs):
    step_number: int = 0
    steps: list[Any] = field(default_factory=list)
    model: Any = None
    tools: dict[str, Any] = field(default_factory=dict)
    tool_choice: Any = None
    active_tools: list[str] | None = None
    provider_options: dict[str, Any] | None = None
    model_settings: dict[str, Any] | None = None
    structured_output: Any = None


@dataclass(slots=True)
class ProcessLLMRequestArgs(_Common):
    prompt: list[dict[str, Any]] = field(default_factory=list)
    model: Any = None
    step_number: int = 0
    steps: list[Any] = field(default_factory=list)
    message_list: MessageList = None  # type: ignore[assignment]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: dict[str, Any] | None = None
    """The V2 tool choice of this call (`{"type": "auto"}`, ...); None when no tools are sent."""
    max_output_tokens: int | None = None
    """The output limit this call is sent with (None: the provider's default). A processor
    with `max_output_tokens_for(state)` may only lower it, right after this hook."""
    guard_input: GuardInput | None = None
    """`await args.guard_input(messages)`: text this processor wants to put into the prompt,
    judged as input first, by the `process_input` of this request's input processors (not
    memory's, nor this one): what they let through, as they left it. A guard that aborts ends
    the run."""


@dataclass(slots=True)
class ProcessLLMResponseArgs(_Common):
    chunks: list[Chunk] = field(default_factory=list)
    model: Any = None
    step_number: int = 0
    steps: list[Any] = field(default_factory=list)
    from_cache: bool = False
    accepted: bool = True
    """False when a `process_output_step` guardrail rejected the step (aborted or asked for a
    retry): the call happened and cost tokens, but its answer is not part of the conversation."""
    message_list: MessageList = None  # type: ignore[assignment]
    warnings: list[Any] = field(default_factory=list)
    """The step's warnings (AI SDK `{"type": "other", "message": ...}`); a processor appends
    one to report a problem with the call on the step's result and `step-finish` chunk."""


@dataclass(slots=True)
class ProcessAPIErrorArgs(_Common):
    error: BaseException | None = None
    messages: list[Message] = field(default_factory=list)
    message_list: MessageList = None  # type: ignore[assignment]
    step_number: int = 0
    steps: list[Any] = field(default_factory=list)
    model: Any = None
    abort_signal: Any = None
    """The call's `abort_signal` (an `asyncio.Event`), or None: a processor that waits before
    asking for a retry should stop waiting when it is set."""


@dataclass(slots=True)
class ProcessOutputStreamArgs(_Common):
    part: Chunk = None  # type: ignore[assignment]
    stream_parts: list[Chunk] = field(default_factory=list)
    message_list: MessageList | None = None


@dataclass(slots=True)
class ProcessOutputStepArgs(_Common):
    messages: list[Message] = field(default_factory=list)
    message_list: MessageList = None  # type: ignore[assignment]
    step_number: int = 0
    finish_reason: str | None = None
    tool_calls: list[Chunk] = field(default_factory=list)
    text: str = ""
    usage: Usage | None = None
    system_messages: list[SystemMessage] = field(default_factory=list)
    steps: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class ProcessToolResultArgs(_Common):
    """After a tool's `execute` returned (never for a tool that raised), before its result
    reaches the client, the history and the next model call."""

    tool_name: str = ""
    tool_call_id: str = ""
    tool_args: Any = None
    result: Any = None
    provider_executed: bool = False
    step_number: int = 0
    """The step whose tool call this result answers."""
    messages: list[Message] = field(default_factory=list)
    message_list: MessageList = None  # type: ignore[assignment]
    system_messages: list[SystemMessage] = field(default_factory=list)
    steps: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class ProcessToolCallArgs(_Common):
    """Right before a tool (not a provider-executed one) validates and runs its arguments."""

    tool_name: str = ""
    tool_call_id: str = ""
    args: Any = None
    """The arguments as the model wrote them (and as the client and the history see them)."""
    step_number: int = 0
    message_list: MessageList = None  # type: ignore[assignment]
    steps: list[Any] = field(default_factory=list)
    processor_id: str = ""
    """The id of the processor this hook belongs to (who `reject` names as the refuser)."""

    def reject(self, reason: str) -> NoReturn:
        """Refuse this one call and keep the run: `return args.reject("why")`. The tool does not
        run, the model reads `reason` as the call's error result, the client gets a
        `tool-output-denied` chunk naming this processor, and the run goes on. It raises
        (`ToolCallRefused`), so a call without `return` refuses too."""
        if not isinstance(reason, str) or not reason.strip():
            raise TypeError(
                f"args.reject(reason): reason must be a non-empty string the model reads, got {reason!r}"
            )
        raise ToolCallRefused(reason, processor_id=self.processor_id)


@dataclass(slots=True)
class OutputResult:
    """The `result` of `process_output_result`."""

    text: str
    usage: Usage
    finish_reason: str | None
    steps: list[Any]
    tool_calls: list[Chunk] = field(default_factory=list)
    tool_results: list[Chunk] = field(default_factory=list)


@dataclass(slots=True)
class ProcessOutputResultArgs(_Common):
    messages: list[Message] = field(default_factory=list)
    message_list: MessageList = None  # type: ignore[assignment]
    result: OutputResult = None  # type: ignore[assignment]


# ---------------------------------------------------------------------- results


@dataclass(slots=True)
class ProcessInputStepResult:
    """Overrides for one step; fields left as `None` keep their current value."""

    model: Any = None
    tool_choice: Any = None
    active_tools: list[str] | None = None
    tools: dict[str, Any] | None = None
    messages: list[Any] | None = None
    message_list: MessageList | None = None
    system_messages: list[SystemMessage] | None = None
    provider_options: dict[str, Any] | None = None
    model_settings: dict[str, Any] | None = None
    structured_output: Any = None


@dataclass(slots=True)
class ProcessLLMRequestResult:
    """`prompt` replaces the outbound prompt for this call only; `response` (a list of chunks)
    short-circuits the provider call and is replayed as the step's stream."""

    prompt: list[dict[str, Any]] | None = None
    response: list[Any] | None = None


@dataclass(slots=True)
class ProcessToolResultResult:
    """`result` replaces the tool's result everywhere: the stream chunk, the history, the next
    prompt and the run's steps."""

    result: Any


@dataclass(slots=True)
class ProcessToolCallResult:
    """`args` is what the tool receives instead (only the tool: the `tool-call` chunk, the
    history and the next prompt keep the model's arguments)."""

    args: Any


@dataclass(slots=True)
class ProcessAPIErrorResult:
    retry: bool = False


@dataclass(slots=True)
class ProcessorViolation:
    """What `on_violation` receives: who, what, and processor-specific detail."""

    processor_id: str
    message: str
    detail: Any = None


STEP_FIELDS = (
    "model",
    "tool_choice",
    "active_tools",
    "tools",
    "provider_options",
    "model_settings",
    "structured_output",
)
"""The step settings a `process_input_step` result may change (besides messages)."""

_STEP_RESULT_CAMEL = {
    "toolChoice": "tool_choice",
    "activeTools": "active_tools",
    "messageList": "message_list",
    "systemMessages": "system_messages",
    "providerOptions": "provider_options",
    "modelSettings": "model_settings",
    "structuredOutput": "structured_output",
}


def step_result_fields(result: ProcessInputStepResult | dict[str, Any]) -> dict[str, Any]:
    """The non-None fields of a `process_input_step` result, snake_case (camelCase accepted)."""
    if isinstance(result, ProcessInputStepResult):
        return {
            name: getattr(result, name)
            for name in ProcessInputStepResult.__slots__
            if getattr(result, name) is not None
        }
    return {_STEP_RESULT_CAMEL.get(key, key): value for key, value in result.items() if value is not None}
