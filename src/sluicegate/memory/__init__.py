"""Memory for agents: `Memory` binds storage, vectors and embedders to an agent's threads.

`Memory` is imported lazily so that the memory processors can use this package's helpers
(`context`, `history`) without an import cycle.
"""

from __future__ import annotations

from typing import Any

from sluicegate.memory.context import MEMORY_CONTEXT_KEY, MemoryContext, memory_context
from sluicegate.memory.errors import MemoryConfigurationError, ThreadAccessError

_LAZY = {
    "Memory": "memory",
    "MemoryOptions": "memory",
    "SemanticRecallOptions": "memory",
    "WorkingMemoryOptions": "memory",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sluicegate.memory' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"sluicegate.memory.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "MEMORY_CONTEXT_KEY",
    "Memory",
    "MemoryConfigurationError",
    "MemoryContext",
    "MemoryOptions",
    "SemanticRecallOptions",
    "ThreadAccessError",
    "WorkingMemoryOptions",
    "memory_context",
]
