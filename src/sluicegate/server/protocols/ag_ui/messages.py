"""AG-UI's input as the agent's: its messages as sluicegate messages, its tools as frontend
tools (tools the model may call and the client runs).

AG-UI sends the whole conversation on every run. An assistant message's tool calls and the tool
messages answering them become one assistant message with `tool-invocation` parts (the shape
memory stores), under the client's message ids, so an agent with memory recognises the messages
it stored itself and repeats none. Reasoning and activity messages are the client's display and
are left out. System and developer messages replace the agent's instructions, so they are
refused unless the server allows client overrides.

A frontend tool is a `Tool` whose call suspends the run (`ToolContext.suspend`) with a marker the
event stream reads as "left to the client"; the client's answer, a tool message in the next
run's input, resumes that run with the result (`resume_stream`), so the result passes the
agent's tool-result processors like any other.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sluicegate.errors import ToolError
from sluicegate.server.bodies import NO_CLIENT_SYSTEM
from sluicegate.server.errors import bad_request
from sluicegate.server.protocols.ag_ui.events import FRONTEND_SUSPEND
from sluicegate.tools import Tool, ToolContext, create_tool

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""The tool names every provider accepts."""
MAX_TOOLS = 128


def _text_of(content: Any, where: str) -> str:
    """A user message's content as text: a string, or text parts (media parts are refused)."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for index, part in enumerate(content or []):
        kind = getattr(part, "type", None)
        if kind != "text":
            raise bad_request(f"{where}.content.{index}", f"{kind!r} parts are not supported; send text")
        texts.append(part.text)
    return "".join(texts)


def _arguments(raw: str, where: str) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        raise bad_request(where, "tool call arguments must be a JSON document") from None


def _result(content: Any) -> Any:
    """A tool message's content: its JSON value when it is JSON, else its text."""
    text = content if isinstance(content, str) else _text_of(content, "messages")
    try:
        return json.loads(text)
    except ValueError:
        return text


def to_messages(messages: list[Any], *, allow_system: bool) -> list[dict[str, Any]]:
    """AG-UI's `messages` as sluicegate message dicts (400 naming the message at fault)."""
    answered: dict[str, Any] = {}
    for message in messages:
        if message.role == "tool":
            answered[message.tool_call_id] = message
    out: list[dict[str, Any]] = []
    calls: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        role = message.role
        if role in ("system", "developer"):
            if not allow_system:
                raise bad_request(f"{where}.role", NO_CLIENT_SYSTEM)
            out.append({"id": message.id, "role": "system", "content": message.content})
        elif role == "user":
            out.append({"id": message.id, "role": "user", "content": _text_of(message.content, where)})
        elif role == "assistant":
            parts: list[dict[str, Any]] = []
            if message.content:
                parts.append({"type": "text", "text": message.content})
            for number, call in enumerate(message.tool_calls or []):
                invocation: dict[str, Any] = {
                    "state": "call",
                    "toolCallId": call.id,
                    "toolName": call.function.name,
                    "args": _arguments(
                        call.function.arguments, f"{where}.toolCalls.{number}.function.arguments"
                    ),
                }
                result = answered.get(call.id)
                if result is not None:
                    invocation["state"] = "result"
                    invocation["result"] = _result(result.content)
                calls.add(call.id)
                parts.append({"type": "tool-invocation", "toolInvocation": invocation})
            if parts:
                out.append({"id": message.id, "role": "assistant", "content": parts})
        elif role == "tool" and message.tool_call_id not in calls:
            raise bad_request(
                f"{where}.toolCallId", f"answers no earlier tool call ({message.tool_call_id!r})"
            )
    return out


def trailing_results(messages: list[Any]) -> dict[str, Any]:
    """The tool messages after the last assistant message: the client's answers to the frontend
    tool calls the previous run left (call id -> result)."""
    results: dict[str, Any] = {}
    for message in reversed(messages):
        if message.role != "tool":
            break
        results[message.tool_call_id] = _result(message.content)
    return results


async def _frontend_execute(input: Any, context: ToolContext) -> Any:
    """Suspends the run for the client; resumed, returns the client's result."""
    if context.resume_data is None:
        await context.suspend(FRONTEND_SUSPEND)
        return None
    return context.resume_data.get("result") if isinstance(context.resume_data, dict) else None


def frontend_tools(tools: list[Any] | None, agent_tools: dict[str, Any]) -> dict[str, Tool]:
    """The client's tools as `Tool`s the run suspends on (400 naming the tool at fault)."""
    import jsonschema

    out: dict[str, Tool] = {}
    if not tools:
        return out
    if len(tools) > MAX_TOOLS:
        raise bad_request("tools", f"at most {MAX_TOOLS} tools")
    for index, declared in enumerate(tools):
        name = declared.name
        where = f"tools.{index}"
        if not TOOL_NAME.match(name):
            raise bad_request(f"{where}.name", "a tool name is 1 to 64 letters, digits, '_' or '-'")
        if name in agent_tools:
            raise bad_request(
                f"{where}.name", f"the agent has a tool named {name!r}: a client tool cannot replace it"
            )
        if name in out:
            raise bad_request(f"{where}.name", f"tool {name!r} is declared twice")
        schema = declared.parameters if declared.parameters is not None else {"type": "object"}
        if not isinstance(schema, dict):
            raise bad_request(f"{where}.parameters", "must be a JSON Schema object")
        try:
            out[name] = create_tool(
                id=name,
                description=declared.description,
                input_schema=schema,
                execute=_frontend_execute,
                suspend_schema=None,
            )
        except (ToolError, ValueError, TypeError, jsonschema.SchemaError) as exc:
            reason = getattr(exc, "message", None) or str(exc)
            raise bad_request(f"{where}.parameters", f"not a usable JSON Schema ({reason})") from None
    return out
