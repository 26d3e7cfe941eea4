"""The keyword options of `Agent.generate` / `stream` / `generate_sync` / `stream_sync`.

They are a `TypedDict` used with `Unpack`, so a type checker rejects a misspelt option
(`max_step=3`) and a wrongly typed value before the run does. At run time `Agent` checks the
same names (an unknown one raises `TypeError`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from typing_extensions import TypeVar

from sluicegate.request_context import RequestContext

if TYPE_CHECKING:
    from sluicegate.models.base import LanguageModel
    from sluicegate.tools import Tool

Out = TypeVar("Out", default=Any)
"""The structured-output type of an agent or a result (`Any` when there is no schema)."""

ProcessorList = Sequence[Any] | Callable[[RequestContext], Any]
"""Processors (and processor workflows), or a function of the request context returning them."""

ToolChoice = Literal["auto", "none", "required"] | Mapping[str, str]
"""`"auto" | "none" | "required"` or `{"type": "tool", "tool_name": "..."}`."""

JSONSchema = dict[str, Any]


class MemoryOption(TypedDict):
    """`memory=` of a call: which conversation thread (and owner) the call belongs to."""

    thread: str | dict[str, Any]
    resource: NotRequired[str]
    options: NotRequired[dict[str, Any]]


class AgentCallOptions(TypedDict, total=False):
    """Every keyword option of a call except `structured_output` (typed separately so the
    result type follows the schema)."""

    max_steps: int
    """The most model calls (steps) of the run; the agent's `default_max_steps` otherwise."""
    input_processors: ProcessorList | None
    output_processors: ProcessorList | None
    error_processors: ProcessorList | None
    max_processor_retries: int | None
    prepare_step: Callable[..., Any] | None
    request_context: RequestContext | None
    tool_choice: ToolChoice | None
    active_tools: Sequence[str] | None
    memory: MemoryOption | Mapping[str, Any] | None
    """`{"thread": id, "resource": id}` (`MemoryOption`); a dict built earlier is accepted too."""
    model_settings: Mapping[str, Any] | None
    """`temperature`, `max_output_tokens`, `top_p`, `top_k`, `stop_sequences`, `seed`, ..."""
    provider_options: Mapping[str, Any] | None
    instructions: str | Sequence[str] | Callable[[RequestContext], str | Sequence[str] | Awaitable[Any]]
    tools: Sequence[Tool] | Mapping[str, Tool] | None
    model: str | LanguageModel | Sequence[Any] | None
    """One model, or fallback models: a list of them, or of `{"model": m, "max_retries": n}`."""
    abort_signal: asyncio.Event | None
    """Set the event to stop the run."""
    processor_timeout: float | None
    """Seconds a processor hook may take; the agent's setting otherwise."""
    output_retries: int
    """How many times the model is asked again, with the validation error, when its structured
    output does not match the schema; the agent's `output_retries` otherwise."""
    max_retries: int
    """Provider retries for retryable errors before the stream starts."""
    max_input_chars: int
    """The longest input (in characters) this call accepts; the agent's setting otherwise."""
    require_tool_approval: bool | Callable[[str, Any, RequestContext], bool | Awaitable[bool]] | None
    """True: every tool call waits for `approve_tool_call` / `decline_tool_call`; a function
    `(tool_name, args, request_context) -> bool` decides per call (an error counts as True)."""


KNOWN_CALL_OPTIONS = frozenset(AgentCallOptions.__annotations__) | {"structured_output"}
