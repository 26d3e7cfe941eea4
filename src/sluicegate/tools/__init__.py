"""Tools the model can call."""

from sluicegate.tools.sources import ToolSource
from sluicegate.tools.tool import Tool, ToolContext, ToolInputError, create_tool, normalize_tools, tool

__all__ = ["Tool", "ToolContext", "ToolInputError", "ToolSource", "create_tool", "normalize_tools", "tool"]
