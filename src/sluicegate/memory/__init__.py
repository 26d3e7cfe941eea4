"""Memory for agents: `Memory` binds storage, vectors and embedders to an agent's threads.

This package holds what the memory processors build on (the thread in the request context,
history helpers, ownership checks, the `MemoryBinding` contract with the agent), so it sits
below `sluicegate.processors`. `Memory` itself assembles those processors, so it lives above
them, in `sluicegate.processors.memory`, and is re-exported here on first access.
"""

from __future__ import annotations

from typing import Any

from sluicegate.memory.context import MEMORY_CONTEXT_KEY, MemoryContext, memory_context
from sluicegate.memory.errors import MemoryConfigurationError, ThreadAccessError

_LAZY = {
    "Memory": "sluicegate.processors.memory",
    "MemoryOptions": "sluicegate.processors.memory",
    "SemanticRecallOptions": "sluicegate.processors.memory",
    "WorkingMemoryOptions": "sluicegate.processors.memory",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sluicegate.memory' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
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
