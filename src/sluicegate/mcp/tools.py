"""An MCP server's tools as sluicegate `Tool`s.

Each is named `<server>_<tool>` (Mastra's namespacing), takes the tool's JSON input schema
(so the model's arguments are validated like any tool's before anything is sent), carries the
tool's annotations, and waits for a person according to the server's `require_approval`. A
call is an ordinary tool call to the agent: `process_tool_call` sees the arguments before they
leave, `process_tool_result` sees what the server sent back before the model does. A result
the server flags `isError`, a server that is gone, hangs or answers what the SDK cannot read
becomes an error the model reads.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from sluicegate.errors import MissingExtraError, ToolError
from sluicegate.mcp.config import ServerConfig
from sluicegate.mcp.connection import ServerConnection, describe
from sluicegate.mcp.elicitation import (
    DEFAULT_ELICITATION_TIMEOUT,
    PAYLOAD_TYPE,
    Questions,
    call_tool,
    check_answer,
    resumed,
)
from sluicegate.tools import Tool, ToolContext

try:
    from mcp_types import CallToolResult
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("mcp", extra="mcp", feature="sluicegate.mcp (MCP servers' tools)") from exc

if TYPE_CHECKING:
    import mcp_types

log = logging.getLogger("sluicegate.mcp")


TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
"""MCP's tool names (the 2025-11-25 specification): a server's other names (spaces, newlines,
kilobytes) never reach the model's tool list."""


class MCPToolError(ToolError):
    """An MCP tool answered with `isError`, or its answer could not be read."""


def needs_approval(config: ServerConfig, annotations: dict[str, Any] | None) -> bool:
    """The server's policy applied to one tool: `"unless-read-only"` spares only a tool whose
    `readOnlyHint` is exactly true (a hint from the server, so anything else waits)."""
    policy = config.require_approval
    if policy == "unless-read-only":
        return not (annotations is not None and annotations.get("readOnlyHint") is True)
    return bool(policy)


class MCPTool(Tool):
    """An MCP server's tool. Its resume data answers the question the server asked mid-call
    (see `elicitation`), checked against that question's schema before the run is claimed."""

    def __init__(self, *, server: str, **tool: Any) -> None:
        super().__init__(**tool)
        self.server = server

    def validate_resume(self, data: Any, *, suspend_payload: Any = None) -> Any:
        asked = (
            suspend_payload
            if isinstance(suspend_payload, dict) and suspend_payload.get("type") == PAYLOAD_TYPE
            else None
        )
        check_answer(data, asked, self.server)  # the call checks it again against the open question
        return resumed(data, asked)


def build_tool(
    connection: ServerConnection, listed: mcp_types.Tool, is_open: Any, questions: Questions | None = None
) -> Tool | None:
    """The sluicegate tool for one listed MCP tool; None (logged) when its input schema is not
    a valid JSON schema, so one bad tool does not hide the server's others. `is_open()` says
    whether the client that listed it is still open: a closed client's tools fail as tool
    errors instead of starting the server again. `questions` holds the calls waiting for a
    person's answer to the server's question (its own when none is given)."""
    questions = questions if questions is not None else Questions(DEFAULT_ELICITATION_TIMEOUT)
    config = connection.config
    name = listed.name
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        log.error("MCP server %r: a tool with the name %r left out (not an MCP tool name)", config.name, name)
        return None
    annotations = (
        listed.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
        if listed.annotations is not None
        else None
    )
    schema = listed.input_schema if isinstance(listed.input_schema, dict) else {}
    if schema.get("type") is None:
        schema = {**schema, "type": "object"}

    async def execute(input: Any, context: ToolContext) -> Any:
        if not is_open():
            raise ToolError(f"the MCP client serving {config.name!r} is closed; tool {name!r} was not called")
        arguments = input if isinstance(input, dict) else {}
        result = await call_tool(connection, questions, name, arguments, context)
        return None if result is None else tool_output(result, config.name, name)

    try:
        return MCPTool(
            server=config.name,
            id=f"{config.name}_{name}",
            description=listed.description or "",
            input_schema=schema,
            execute=execute,
            require_approval=needs_approval(config, annotations),
            annotations=annotations,
        )
    except Exception as exc:
        log.error("MCP server %r: tool %r left out: %s", config.name, name, describe(exc))
        return None


def tool_output(result: Any, server: str, tool: str) -> Any:
    """What the model reads: the structured result when the tool declares one, else its
    content blocks in MCP's JSON shape. `isError` raises `MCPToolError` with the tool's text."""
    if not isinstance(result, CallToolResult):
        raise MCPToolError(f"MCP server {server!r}: tool {tool!r} answered with a {type(result).__name__}")
    if result.is_error:
        text = "\n".join(getattr(block, "text", "") for block in result.content).strip()
        raise MCPToolError(f"MCP tool {server}_{tool} failed: {text or 'no details given'}")
    if result.structured_content is not None:
        return result.structured_content
    return {
        "content": [
            block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
        ]
    }
