"""`HeldStep`: a step whose tool calls wait on people, as a run holds it between streams."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sluicegate.messages import MessageList
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage

if TYPE_CHECKING:
    from sluicegate.storage.suspended_runs import PendingToolCall
    from sluicegate.tools import Tool

PENDING_KINDS = {"tool-call-approval": "approval", "tool-call-suspended": "suspend"}
"""Chunks `call_tool` returns for a call that waits on a person, and the store's kind for each."""


@dataclass(eq=False)
class HeldStep:
    """A step whose tools wait on people: `results` are the calls already done (by id), `queue`
    the undecided ones in call order (its first is the one the store says is pending)."""

    step_number: int
    tool_calls: list[Chunk]
    finish_reason: str | None
    usage: Usage
    text: str = ""
    reasoning_text: str = ""
    warnings: list[Any] = field(default_factory=list)
    response: dict[str, Any] = field(default_factory=dict)
    model: str = ""
    """`provider/model_id` of the model that served the step (`StepResult.model`)."""
    results: dict[str, Chunk] = field(default_factory=dict)
    queue: list[PendingToolCall] = field(default_factory=list)
    message_list: MessageList | None = None

    def invocation(self, tool_call_id: str) -> dict[str, Any] | None:
        """The call's part in the stored assistant message (its result is written there)."""
        if self.message_list is None:
            return None
        for message in reversed(list(self.message_list)):
            for part in message.content.parts:
                if part.get("type") == "tool-invocation":
                    invocation = part["toolInvocation"]
                    if invocation.get("toolCallId") == tool_call_id:
                        return invocation  # type: ignore[no-any-return]
        return None

    def pending_chunk(self, run_id: str, tools: Mapping[str, Tool] | None = None) -> Chunk:
        """The chunk that asks about the first undecided call (args copied: stream processors
        may redact what the client sees, never what runs). An approval request carries the
        tool's `annotations` (MCP's hints) when it has some, for the person deciding."""
        call = self.queue[0]
        kind = "tool-call-approval" if call.kind == "approval" else "tool-call-suspended"
        extra = {"suspend_payload": copy.deepcopy(call.suspend_payload)} if call.kind == "suspend" else {}
        tool = tools.get(call.tool_name) if tools is not None and call.kind == "approval" else None
        if tool is not None and tool.annotations:
            extra["annotations"] = copy.deepcopy(tool.annotations)
        payload = Payload(
            tool_call_id=call.tool_call_id, tool_name=call.tool_name, args=copy.deepcopy(call.args), **extra
        )
        return Chunk(kind, run_id, payload)

    def ordered_results(self) -> list[Chunk]:
        return [
            self.results[c.payload.tool_call_id]
            for c in self.tool_calls
            if c.payload.tool_call_id in self.results
        ]


def pending_call(chunk: Chunk) -> PendingToolCall:
    from sluicegate.storage.suspended_runs import PendingToolCall

    payload = chunk.payload
    return PendingToolCall(
        tool_call_id=payload.tool_call_id,
        tool_name=payload.tool_name,
        args=json_value(payload.get("args")),
        kind=PENDING_KINDS[chunk.type],  # type: ignore[arg-type]
        suspend_payload=json_value(payload.get("suspend_payload")),
    )


def json_value(value: Any) -> Any:
    """Plain JSON of a value the run produced (args, payloads): what cannot be encoded is text."""
    return json.loads(json.dumps(value, default=json_default, allow_nan=False))


def json_default(value: Any) -> Any:
    """`json.dumps`'s `default` of `json_value`: a value's `to_dict()`, else its text."""
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else str(value)
