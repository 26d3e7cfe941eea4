"""sluicegate: an agent runtime whose every stage is driven by processors."""

from __future__ import annotations

from sluicegate.agent import Agent
from sluicegate.registry import Sluicegate
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from sluicegate.tools import Tool, ToolContext, create_tool, tool

__all__ = [
    "RESOURCE_ID_KEY",
    "THREAD_ID_KEY",
    "Agent",
    "RequestContext",
    "Sluicegate",
    "Tool",
    "ToolContext",
    "create_tool",
    "tool",
]
__version__ = "0.1.0"
