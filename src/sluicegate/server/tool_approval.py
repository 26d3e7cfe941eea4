"""Tools that wait for a person: the tool routes refuse to run them directly.

An agent run holds a call to a `require_approval` tool until someone approves it
(`approve-tool-call`); `POST /api/tools/{id}/execute` would let any caller skip that person and
choose the arguments too. So direct execution of such a tool is refused (403) unless the
operator allows it (`ServerSettings.allow_unapproved_tool_execution`)."""

from __future__ import annotations

from typing import Any

from sluicegate.server.errors import ApiError
from sluicegate.tools.tool import requires_approval

ALLOW_ENV = "SLUICEGATE_ALLOW_UNAPPROVED_TOOL_EXECUTION"


def refuse_unapproved(tool: Any, *, allowed: bool) -> None:
    """Raise the 403 that names the rule, unless `tool` needs no approval or the operator allows it."""
    if allowed or not requires_approval(tool):
        return
    raise ApiError(
        403,
        f"tool {tool.id!r} requires approval: each call waits for a person's decision in an agent "
        "run (approve-tool-call), so it is not run directly on this route; the server's operator "
        f"can allow it with --allow-unapproved-tool-execution ({ALLOW_ENV}=1)",
        extra={"code": "TOOL_REQUIRES_APPROVAL", "toolId": tool.id},
    )
