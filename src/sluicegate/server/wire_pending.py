"""The call a suspended `generate` waits on, where Mastra's server shows it: in the metadata of the
assistant message that holds the call (`pendingToolApprovals` for an approval, `suspendedTools`
for a tool that suspended), keyed by the call's id.

Only a run that is suspended says so: once the call is decided it is no longer pending (Mastra
removes the entry then too, when the run has a thread). The entry is built on the response's
JSON copy, never on the run's own messages, so nothing of it is stored.
"""

from __future__ import annotations

from typing import Any

from sluicegate.agent.results import FullOutput
from sluicegate.stream.payload import to_json

APPROVAL = "pendingToolApprovals"
SUSPENSION = "suspendedTools"


def _holder(stored: list[dict[str, Any]], tool_call_id: str) -> tuple[dict[str, Any], Any] | None:
    """The last assistant message (JSON) whose parts hold the call, and the call's stored args."""
    for message in reversed(stored):
        if message.get("role") != "assistant":
            continue
        for part in message.get("content", {}).get("parts", []):
            invocation = part.get("toolInvocation") if part.get("type") == "tool-invocation" else None
            if isinstance(invocation, dict) and invocation.get("toolCallId") == tool_call_id:
                return message, invocation.get("args")
    return None


def mark_pending(stored: list[dict[str, Any]], result: FullOutput[Any], resume_schema: str | None) -> None:
    """Add the waiting call's entry to its message in `stored` (the body's JSON messages):
    `{toolCallId, toolName, args, type, runId, [suspendPayload], resumeSchema}`, as Mastra
    keeps it. Nothing when the run is not suspended or no message holds the call."""
    waiting = result.suspend_payload
    if waiting is None or result.finish_reason != "suspended":
        return
    tool_call_id = waiting.get("tool_call_id")
    found = _holder(stored, tool_call_id) if isinstance(tool_call_id, str) else None
    if found is None:
        return
    message, args = found
    suspended = waiting.get("suspend_payload")
    entry: dict[str, Any] = {
        "toolCallId": tool_call_id,
        "toolName": waiting.get("tool_name"),
        "args": args,
        "type": "approval" if suspended is None else "suspension",
        "runId": result.run_id,
    }
    if suspended is not None:
        entry["suspendPayload"] = to_json(suspended)
    if resume_schema is not None:
        entry["resumeSchema"] = resume_schema
    key = APPROVAL if suspended is None else SUSPENSION
    content = message["content"] = dict(message["content"])  # the message's own dicts stay as they are
    metadata = dict(content.get("metadata") or {})
    metadata[key] = {**(metadata.get(key) or {}), tool_call_id: entry}
    content["metadata"] = metadata
