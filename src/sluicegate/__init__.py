"""sluicegate: an agent runtime whose every stage is driven by processors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluicegate._lazy import lazy_attributes
from sluicegate.agent import Agent
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from sluicegate.tools import Tool, ToolContext, create_tool, tool

if TYPE_CHECKING:
    from sluicegate.registry import Sluicegate

# The registry (and the storage it types against) loads when first named: an agent alone
# does not need it.
__getattr__ = lazy_attributes(__name__, {"Sluicegate": "registry"})


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
