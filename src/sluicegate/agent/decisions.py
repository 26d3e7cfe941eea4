"""Whether a tool call waits for a person, and whether a person's decision about it is valid.

One module for both, called by the agent (`tool_phase` asks `needs_approval`; `resume` checks a
decision before it claims the stored run), by the server's routes (`check_kind`, for a 409
before anything is claimed) and by the durable workflow's update validators (`decide`, against
the call the workflow waits on). A decision is refused when it names a call that is not the
pending one (stale or unknown id), is of the wrong kind (approving a call that suspended itself,
resuming one that waits for an approval), gives a decline reason over
`MAX_DECLINE_REASON_CHARS`, or resume data the tool's `resume_schema` rejects.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sluicegate.errors import InvalidInputError
from sluicegate.tools import Tool

if TYPE_CHECKING:
    from sluicegate.agent.run_core import RunCore

log = logging.getLogger("sluicegate.agent")

Action = Literal["approve", "decline", "resume"]

MAX_DECLINE_REASON_CHARS = 4000
"""The longest decline reason accepted: it becomes the tool result the model reads."""

MAX_ID_CHARS = 1024
"""The longest run or tool call id a decision may name."""

DEFAULT_DECLINE_REASON = "Tool call was not approved by the user"
"""What the model is told about a declined call when the decline gives no reason (Mastra's text)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What a person decided about the pending call: `approve`, `decline` (with the reason the
    model is told) or `resume` (with the tool's validated resume data)."""

    action: str
    tool_call_id: str
    reason: str = DEFAULT_DECLINE_REASON
    resume_data: Any = None


_KIND_OF: dict[str, str] = {"approve": "approval", "resume": "suspend"}
"""The kind of waiting call each action decides (`decline` decides either)."""


class PendingCall(Protocol):
    """A call waiting on a person, as the store (`PendingToolCall`) and the workflow know it."""

    @property
    def tool_call_id(self) -> str: ...

    @property
    def tool_name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def suspend_payload(self) -> Any: ...


class WrongDecisionError(InvalidInputError):
    """The decision is of the wrong kind for the call: it waits for `waits_for` instead."""

    def __init__(self, tool_call_id: str, waits_for: str) -> None:
        if waits_for == "suspend":
            hint = (
                "suspended itself and waits for resume data: "
                "use resume_stream(resume_data, ...) or decline_tool_call"
            )
        else:
            hint = "waits for an approval: use approve_tool_call or decline_tool_call"
        super().__init__(f"tool call {tool_call_id!r} {hint}")
        self.tool_call_id = tool_call_id
        self.waits_for = waits_for


class StaleToolCallError(InvalidInputError):
    """The decision names a call other than the one the run waits on."""

    def __init__(self, tool_call_id: str, pending: str) -> None:
        super().__init__(f"tool call {tool_call_id!r} is not the pending one ({pending!r})")
        self.tool_call_id = tool_call_id
        self.pending = pending


async def needs_approval(run: RunCore, tool: Tool, name: str, args: Any, tool_call_id: str) -> bool:
    """Whether this call must wait for a person: the tool asks for it, or the call's
    `require_tool_approval` (True, or a function of `(tool_name, args, request_context)`) does.
    A function that fails is taken as yes: a guard that cannot decide does not let the call run."""
    if tool_call_id in run.state.approved:
        return False
    if tool.require_approval:
        return True
    option = run.require_approval
    if option is None or option is False:
        return False
    if option is True:
        return True
    try:
        answer = option(name, args, run.request_context)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception:
        log.error(
            "require_tool_approval failed for tool %r: the call waits for approval", name, exc_info=True
        )
        return True
    if not isinstance(answer, bool):
        log.error(
            "require_tool_approval returned %r for tool %r, not True/False: the call waits for approval",
            answer,
            name,
        )
        return True
    return answer


def check_id(value: Any, name: str, *, optional: bool = False) -> None:
    """A caller-supplied run or tool call id: a non-empty string of bounded length."""
    if value is None and optional:
        return
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise InvalidInputError(f"{name} must be a non-empty string of at most {MAX_ID_CHARS} characters")


def decline_reason(reason: Any) -> str:
    """The reason the model is told (Mastra's default text without one); bounded."""
    if reason is None:
        return DEFAULT_DECLINE_REASON
    if not isinstance(reason, str):
        raise InvalidInputError(f"reason must be a string, got {type(reason).__name__}")
    if len(reason) > MAX_DECLINE_REASON_CHARS:
        raise InvalidInputError(
            f"reason is {len(reason)} characters; at most {MAX_DECLINE_REASON_CHARS} are accepted"
        )
    return reason


def check_kind(action: Action, call: PendingCall) -> None:
    """`WrongDecisionError` when `call` waits for another kind of decision than `action`."""
    wanted = _KIND_OF.get(action)
    if wanted is not None and call.kind != wanted:
        raise WrongDecisionError(call.tool_call_id, call.kind)


def the_pending_call(calls: Sequence[PendingCall], tool_call_id: str | None) -> PendingCall | None:
    """The call of `calls` that `tool_call_id` names (the only one when it names none); None when
    there is no such single call (the store raises its own typed error for that)."""
    found = [c for c in calls if tool_call_id is None or c.tool_call_id == tool_call_id]
    return found[0] if len(found) == 1 else None


def decide(
    action: Action,
    call: PendingCall,
    *,
    tool_call_id: str | None = None,
    reason: Any = None,
    resume_data: Any = None,
    tool: Tool | None = None,
) -> Decision:
    """The decision about `call` (the one the run waits on), checked: the id it names (None:
    the pending one), its kind, the decline reason, resume data against `tool`'s schema."""
    check_id(tool_call_id, "tool_call_id", optional=True)
    if tool_call_id is not None and tool_call_id != call.tool_call_id:
        raise StaleToolCallError(tool_call_id, call.tool_call_id)
    check_kind(action, call)
    text = decline_reason(reason) if action == "decline" else DEFAULT_DECLINE_REASON
    if action == "resume" and tool is not None:
        # ToolInputError names the problem; the payload carries a question's own schema (MCP's)
        resume_data = tool.validate_resume(resume_data, suspend_payload=call.suspend_payload)
    return Decision(action, call.tool_call_id, text, resume_data if action == "resume" else None)
