"""Whether a tool call must wait for a person's approval before it runs."""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any

from sluicegate.tools import Tool

if TYPE_CHECKING:
    from sluicegate.agent.run_core import RunCore

log = logging.getLogger("sluicegate.agent")


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
