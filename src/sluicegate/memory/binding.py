"""The contract between an agent and its memory.

An agent with `memory=` asks it, per request, for the processors and tools that serve one
thread. The agent runs the input processors before the user's (`[memory] -> [yours]`) and the
output processors after them (`[yours] -> [memory]`), so an output guardrail's abort means
nothing is saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from sluicegate.request_context import RequestContext


@dataclass
class MemoryBinding:
    """What memory contributes to one request."""

    input_processors: list[Any] = field(default_factory=list)
    output_processors: list[Any] = field(default_factory=list)
    tools: dict[str, Any] = field(default_factory=dict)
    instructions: list[str] = field(default_factory=list)


class AgentMemory(Protocol):
    """Anything that can bind to a thread; `sluicegate.memory.Memory` is the built-in one."""

    async def bind(
        self,
        *,
        thread_id: str,
        resource_id: str | None,
        request_context: RequestContext,
        options: dict[str, Any] | None = None,
    ) -> MemoryBinding:
        """Create the thread on first use, check it belongs to `resource_id` (raising a clear
        error if not), and return the processors and tools for this request."""
        ...
