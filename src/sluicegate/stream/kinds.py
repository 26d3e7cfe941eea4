"""The payload of each chunk kind, for type checkers, and `is_chunk` to narrow a chunk to it.

At run time every payload is a `Payload` attribute bag (or a `TextPayload` for text and
reasoning deltas), built without validation on the per-token path. The protocols below describe
what each kind carries, so

    async for chunk in output.full_stream:
        if is_chunk(chunk, "tool-call"):
            print(chunk.payload.tool_name)  # str, for mypy / pyright too

type-checks precisely while a chunk costs nothing more to build. `is_chunk` is a plain
`chunk.type == kind` comparison at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard, overload

from sluicegate.stream.chunk import Chunk, TextPayload

if TYPE_CHECKING:
    from sluicegate.stream.usage import Usage


class IdPayload(Protocol):
    """`text-start` / `text-end` / `reasoning-start` / `reasoning-end`."""

    id: str
    provider_metadata: dict[str, Any] | None


class StepStartPayload(Protocol):
    message_id: str


class ToolCallPayload(Protocol):
    """`tool-call`: the model asks for a tool; `args` is the parsed JSON input."""

    tool_call_id: str
    tool_name: str
    args: Any
    provider_executed: bool | None
    provider_metadata: dict[str, Any] | None


class ToolCallStreamingStartPayload(Protocol):
    """`tool-call-input-streaming-start`."""

    tool_call_id: str
    tool_name: str


class ToolCallDeltaPayload(Protocol):
    """`tool-call-delta`: a piece of the tool input's JSON text as the model writes it."""

    tool_call_id: str
    args_text_delta: str


class ToolCallStreamingEndPayload(Protocol):
    """`tool-call-input-streaming-end`."""

    tool_call_id: str


class ToolResultPayload(Protocol):
    """`tool-result`: what a tool returned."""

    tool_call_id: str
    tool_name: str
    args: Any
    result: Any
    is_error: bool


class ToolErrorPayload(Protocol):
    """`tool-error`: a tool raised, its input failed validation, or it is not available."""

    tool_call_id: str
    tool_name: str
    args: Any
    error: BaseException


class StepResultPayload(Protocol):
    reason: str | None
    warnings: list[Any]
    is_continued: bool


class StepOutputPayload(Protocol):
    usage: Usage


class StepFinishPayload(Protocol):
    """`step-finish` / `finish`: why the step (or run) ended and the tokens it used."""

    step_result: StepResultPayload
    output: StepOutputPayload


class ErrorPayload(Protocol):
    """`error`: the run failed; `error` is the exception."""

    error: BaseException


class TripwirePayload(Protocol):
    """`tripwire`: a processor stopped the run."""

    reason: str
    retry: bool
    metadata: Any
    processor_id: str | None


class FilePayload(Protocol):
    data: Any
    media_type: str | None


class ToolCallApprovalPayload(Protocol):
    """`tool-call-approval`: the run stopped before this call; approve or decline it."""

    tool_call_id: str
    tool_name: str
    args: Any


class ToolCallSuspendedPayload(Protocol):
    """`tool-call-suspended`: the tool called `context.suspend(suspend_payload)`; resume it."""

    tool_call_id: str
    tool_name: str
    args: Any
    suspend_payload: Any


class ToolOutputDeniedPayload(Protocol):
    """`tool-output-denied`: the call was declined and never ran; `reason` is what the model read."""

    tool_call_id: str
    tool_name: str
    reason: str


ChunkKind = Literal[
    "start",
    "step-start",
    "text-start",
    "text-delta",
    "text-end",
    "reasoning-start",
    "reasoning-delta",
    "reasoning-end",
    "tool-call",
    "tool-call-input-streaming-start",
    "tool-call-delta",
    "tool-call-input-streaming-end",
    "tool-result",
    "tool-error",
    "step-finish",
    "finish",
    "error",
    "tripwire",
    "file",
    "tool-call-approval",
    "tool-call-suspended",
    "tool-output-denied",
]


@overload
def is_chunk(
    chunk: Chunk[Any], kind: Literal["text-delta", "reasoning-delta"]
) -> TypeGuard[Chunk[TextPayload]]: ...
@overload
def is_chunk(
    chunk: Chunk[Any], kind: Literal["text-start", "text-end", "reasoning-start", "reasoning-end"]
) -> TypeGuard[Chunk[IdPayload]]: ...
@overload
def is_chunk(chunk: Chunk[Any], kind: Literal["step-start"]) -> TypeGuard[Chunk[StepStartPayload]]: ...
@overload
def is_chunk(chunk: Chunk[Any], kind: Literal["tool-call"]) -> TypeGuard[Chunk[ToolCallPayload]]: ...
@overload
def is_chunk(
    chunk: Chunk[Any], kind: Literal["tool-call-input-streaming-start"]
) -> TypeGuard[Chunk[ToolCallStreamingStartPayload]]: ...
@overload
def is_chunk(
    chunk: Chunk[Any], kind: Literal["tool-call-delta"]
) -> TypeGuard[Chunk[ToolCallDeltaPayload]]: ...
@overload
def is_chunk(
    chunk: Chunk[Any], kind: Literal["tool-call-input-streaming-end"]
) -> TypeGuard[Chunk[ToolCallStreamingEndPayload]]: ...
@overload
def is_chunk(chunk: Chunk[Any], kind: Literal["tool-result"]) -> TypeGuard[Chunk[ToolResultPayload]]: ...
@overload
def is_chunk(chunk: Chunk[Any], kind: Literal["tool-error"]) -> TypeGuard[Chunk[ToolErrorPayload]]: ...
@overload
def is_chunk(
    chunk: Chunk[Any], kind: Literal["step-finish", "finish"]
) -> TypeGuard[Chunk[StepFinishPayload]]: ...
@overload
def is_chunk(chunk: Chunk[Any], kind: Literal["error"]) -> TypeGuard[Chunk[ErrorPayload]]: ...
@overload
def is_chunk(chunk: Chunk[Any], kind: Literal["tripwire"]) -> TypeGuard[Chunk[TripwirePayload]]: ...
@overload
def is_chunk(chunk: Chunk[Any], kind: Literal["file"]) -> TypeGuard[Chunk[FilePayload]]: ...
@overload
def is_chunk(
    chunk: Chunk[Any], kind: Literal["tool-call-approval"]
) -> TypeGuard[Chunk[ToolCallApprovalPayload]]: ...
@overload
def is_chunk(
    chunk: Chunk[Any], kind: Literal["tool-call-suspended"]
) -> TypeGuard[Chunk[ToolCallSuspendedPayload]]: ...
@overload
def is_chunk(
    chunk: Chunk[Any], kind: Literal["tool-output-denied"]
) -> TypeGuard[Chunk[ToolOutputDeniedPayload]]: ...
@overload
def is_chunk(chunk: Chunk[Any], kind: str) -> bool: ...
def is_chunk(chunk: Chunk[Any], kind: str) -> bool:
    """Whether `chunk` is of `kind`; narrows its payload type to that kind's for type checkers."""
    return chunk.type == kind


ToolCallChunk = Chunk[ToolCallPayload]
ToolResultChunk = Chunk[ToolResultPayload]
ToolErrorChunk = Chunk[ToolErrorPayload]
TextDeltaChunk = Chunk[TextPayload]
