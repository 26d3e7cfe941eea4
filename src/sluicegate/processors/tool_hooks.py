"""The tool hooks of one request: a successful tool result through the `process_tool_result`
chain and a call's arguments through the `process_tool_call` chain, in the order of the output
processors. `ProcessorRunner` builds one and exposes its two methods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluicegate.messages import MessageList
from sluicegate.processors.args import (
    ProcessToolCallArgs,
    ProcessToolCallResult,
    ProcessToolResultArgs,
    ProcessToolResultResult,
)
from sluicegate.processors.hook_call import HookEntry, call_hook
from sluicegate.processors.returns import hook_result_fields


class ToolHooks:
    """`tool_call` and `tool_result` are the entries implementing each hook; `common(entry)`
    gives the arguments every hook gets (abort, state, writer, ...), current at call time."""

    def __init__(
        self,
        *,
        tool_call: list[HookEntry],
        tool_result: list[HookEntry],
        common: Callable[[HookEntry], dict[str, Any]],
    ) -> None:
        self.tool_call = tool_call
        self.tool_result = tool_result
        self.common = common

    async def run_tool_result(
        self,
        result: Any,
        *,
        tool_name: str,
        tool_call_id: str,
        tool_args: Any,
        provider_executed: bool,
        step_number: int,
        steps: list[Any],
        message_list: MessageList,
    ) -> Any:
        """A successful tool result through the `process_tool_result` chain; the result to use."""
        for entry in self.tool_result:
            args = ProcessToolResultArgs(
                **self.common(entry),
                tool_name=tool_name,
                tool_call_id=tool_call_id,
                tool_args=tool_args,
                result=result,
                provider_executed=provider_executed,
                step_number=step_number,
                messages=message_list.get.all.db(),
                message_list=message_list,
                system_messages=message_list.get_system_messages(),
                steps=steps,
            )
            fields = hook_result_fields(
                entry,
                await call_hook(entry, args),
                ProcessToolResultResult,
                "{'result': ...}, ProcessToolResultResult or None",
            )
            if fields is not None:
                result = fields["result"]
        return result

    async def run_tool_call(
        self,
        tool_args: Any,
        *,
        tool_name: str,
        tool_call_id: str,
        step_number: int,
        steps: list[Any],
        message_list: MessageList,
    ) -> Any:
        """A tool call's arguments through the `process_tool_call` chain; what the tool receives."""
        for entry in self.tool_call:
            args = ProcessToolCallArgs(
                **self.common(entry),
                tool_name=tool_name,
                tool_call_id=tool_call_id,
                args=tool_args,
                step_number=step_number,
                message_list=message_list,
                steps=steps,
                processor_id=entry.pid,
            )
            fields = hook_result_fields(
                entry,
                await call_hook(entry, args),
                ProcessToolCallResult,
                "{'args': ...}, ProcessToolCallResult or None",
            )
            if fields is not None:
                tool_args = fields["args"]
        return tool_args
