"""What a `POST /chat/{agentId}` request asks for: the AI SDK's body (`id`, `messages` as
`UIMessage[]`, `trigger`, `messageId`) plus Mastra's `memory`, and the decision it may carry.

A decision is how a client answers a run that waits for a person:

- ai v6 and later: the trailing assistant message holds a tool part in state
  `approval-responded` whose `approval.id` is the `approvalId` the stream sent
  (`<runId>::<toolCallId>`); `approved` and `reason` come from `addToolApprovalResponse`;
- ai v5 (no approval parts), or any version resuming a tool that suspended itself: the body
  names the run, as `@mastra/ai-sdk` reads it: `runId`, `resumeData` (`{"approved": bool,
  "reason"?}` for an approval, the tool's resume data otherwise) and optionally `toolCallId`.

Anything that claims to be a decision but is malformed or ambiguous is a 400: it never falls
through to a fresh run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sluicegate.server.bodies import MAX_RUN_ID_CHARS, MemoryBody
from sluicegate.server.errors import bad_request
from sluicegate.server.plain_json import check_plain_json
from sluicegate.server.protocols.ai_sdk.ui_stream import APPROVAL_ID_SEPARATOR

MAX_MESSAGES = 10_000
_ID = r"^[^\x00-\x1f\x7f]+$"


class ChatBody(BaseModel):
    """Body of `POST /chat/{agentId}` (what `DefaultChatTransport` sends, plus `memory` and the
    explicit decision fields). Unknown fields are a 400 naming them."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        pattern=_ID,
        description="The chat; its thread by default.",
    )
    messages: list[dict[str, Any]] = Field(
        min_length=1, max_length=MAX_MESSAGES, description="`UIMessage[]`."
    )
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    messageId: str | None = Field(default=None, max_length=MAX_RUN_ID_CHARS)
    memory: MemoryBody | None = Field(
        default=None, description="Another thread (and resource) than the chat's."
    )
    requestContext: dict[str, Any] | None = None
    runId: str | None = Field(default=None, min_length=1, max_length=MAX_RUN_ID_CHARS, pattern=_ID)
    toolCallId: str | None = Field(default=None, min_length=1, max_length=MAX_RUN_ID_CHARS, pattern=_ID)
    resumeData: Any = None

    @model_validator(mode="before")
    @classmethod
    def _plain_json(cls, data: Any) -> Any:
        return check_plain_json(data)


@dataclass(frozen=True)
class Decision:
    """A person's answer to a waiting run."""

    kind: Literal["approve", "decline", "resume"]
    run_id: str
    tool_call_id: str | None
    reason: str | None = None
    resume_data: Any = None


def decision_of(body: ChatBody) -> Decision | None:
    """The decision the request carries, if any (module docstring); 400 when one is malformed."""
    if body.resumeData is not None or body.runId is not None:
        return _explicit(body)
    last = body.messages[-1]
    if last.get("role") != "assistant" or body.trigger == "regenerate-message":
        return None
    parts = last.get("parts")
    responded = (
        [p for p in parts if isinstance(p, dict) and p.get("state") == "approval-responded"]
        if isinstance(parts, list)
        else []
    )
    if not responded:
        return None
    if len(responded) > 1:
        raise bad_request("messages", "answer one approval per request (the trailing message has several)")
    return _native(responded[0])


def _explicit(body: ChatBody) -> Decision:
    if body.runId is None:
        raise bad_request("runId", "resumeData needs the runId of the waiting run")
    data = body.resumeData
    if data is None:
        raise bad_request(
            "resumeData", "runId needs resumeData: {approved: true|false} or the tool's resume data"
        )
    if isinstance(data, dict) and "approved" in data:
        approved = data["approved"]
        reason = data.get("reason")
        if not isinstance(approved, bool) or (reason is not None and not isinstance(reason, str)):
            raise bad_request("resumeData", "an approval is {approved: boolean, reason?: string}")
        if set(data) - {"approved", "reason"}:
            raise bad_request("resumeData", "an approval is {approved: boolean, reason?: string}")
        return Decision("approve" if approved else "decline", body.runId, body.toolCallId, reason)
    return Decision("resume", body.runId, body.toolCallId, resume_data=data)


def _native(part: dict[str, Any]) -> Decision:
    """An ai v6+ `approval-responded` tool part: the run id is the `approvalId` before
    `::<toolCallId>` (matched as an exact suffix: either id may contain the separator)."""
    approval = part.get("approval")
    tool_call_id = part.get("toolCallId")
    if (
        not isinstance(approval, dict)
        or not isinstance(approval.get("id"), str)
        or not isinstance(approval.get("approved"), bool)
        or (approval.get("reason") is not None and not isinstance(approval.get("reason"), str))
        or not isinstance(tool_call_id, str)
        or not tool_call_id
    ):
        raise bad_request(
            "messages", "a tool part in state approval-responded needs toolCallId and approval {id, approved}"
        )
    suffix = APPROVAL_ID_SEPARATOR + tool_call_id
    approval_id: str = approval["id"]
    run_id = approval_id[: -len(suffix)] if approval_id.endswith(suffix) else ""
    if not run_id:
        raise bad_request(
            "messages", f"approval id {approval_id!r} is not one this server sent for {tool_call_id!r}"
        )
    kind: Literal["approve", "decline"] = "approve" if approval["approved"] else "decline"
    return Decision(kind, run_id, tool_call_id, approval.get("reason"))


_DONE_STATES = frozenset(("output-available", "output-error"))


def _finished_part(part: Any) -> bool:
    """Tool parts still waiting (for input, an approval, a result) or denied are dropped from
    history: a dangling call makes providers reject the prompt."""
    if not isinstance(part, dict):
        return True
    kind = part.get("type")
    if isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool"):
        return part.get("state") in _DONE_STATES
    return True


def run_messages(
    messages: list[dict[str, Any]], trigger: str, *, thread_keeps_history: bool
) -> list[dict[str, Any]]:
    """The UI messages a new run gets. With a thread (memory), the thread holds the history:
    only the turn after the last assistant message goes in (useChat sends the whole chat each
    time). `regenerate-message` drops the trailing assistant message first."""
    chosen = list(messages)
    if trigger == "regenerate-message" and chosen and chosen[-1].get("role") == "assistant":
        chosen.pop()
    if thread_keeps_history:
        last_assistant = max((i for i, m in enumerate(chosen) if m.get("role") == "assistant"), default=-1)
        chosen = chosen[last_assistant + 1 :]
    out: list[dict[str, Any]] = []
    for message in chosen:
        parts = message.get("parts")
        if isinstance(parts, list):
            kept = [p for p in parts if _finished_part(p)]
            if not kept:
                continue
            if len(kept) != len(parts):
                message = {**message, "parts": kept}
        out.append(message)
    if not out:
        raise bad_request("messages", "no message for the agent to answer (send a user message)")
    return out
