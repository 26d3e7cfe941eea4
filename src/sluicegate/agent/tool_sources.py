"""An agent's tool sources (`Agent(tools=[mcp, ...])`): listed once, merged into its tools.

The listing happens when something awaits it: `Agent.load_tools()` (a Temporal worker and
`sluicegate serve` at their start, before anything reads the agent's tools) or the agent's first
run. A failure is a `ConfigurationError` naming the agent and the source (an MCP client's error
names the server); nothing is merged then, and the next attempt lists again. A listed tool whose
name the agent already has is refused rather than silently shadowing one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from sluicegate.errors import ConfigurationError
from sluicegate.tools import Tool, ToolSource, normalize_tools

T = TypeVar("T")

DEFAULT_LIST_TIMEOUT = 60.0
"""Seconds for listing all of an agent's sources (an MCP server also has its own per-request
timeout, which names it when it is the one that hangs)."""


def split_tools(tools: Any) -> tuple[Any, tuple[ToolSource, ...]]:
    """`tools=` as given -> (the tools, the sources). A source may be given alone or in a list."""
    if isinstance(tools, ToolSource) and not isinstance(tools, Tool):
        return None, (tools,)
    if isinstance(tools, (list, tuple)):
        sources = tuple(t for t in tools if isinstance(t, ToolSource) and not isinstance(t, Tool))
        if sources:
            return [t for t in tools if not any(t is s for s in sources)], sources
    return tools, ()


class ToolSources:
    """The sources of one agent, and whether they have been listed into its tools."""

    def __init__(self, agent_id: str, sources: Sequence[ToolSource]) -> None:
        self.agent_id = agent_id
        self.sources = tuple(sources)
        self.loaded = not self.sources
        self._lock: asyncio.Lock | None = None

    async def load(self, tools: dict[str, Tool], within: float | None = DEFAULT_LIST_TIMEOUT) -> None:
        """List every source (concurrently, within `within` seconds) into `tools`, once."""
        if self.loaded:
            return
        if within is not None and not 0 < within < float("inf"):
            raise ConfigurationError(f"within must be a positive number of seconds, got {within!r}")
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.loaded:
                return
            listed = await all_or_none([self._list(s, within) for s in self.sources])
            merged: dict[str, Tool] = {}
            for source, found in zip(self.sources, listed, strict=True):
                for name in found:
                    if name in tools or name in merged:
                        raise ConfigurationError(
                            f"agent {self.agent_id!r}: {source!r} lists a tool {name!r}, "
                            "a name the agent already has"
                        )
                merged.update(found)
            tools.update(merged)
            self.loaded = True

    async def _list(self, source: ToolSource, within: float | None) -> dict[str, Tool]:
        try:
            async with asyncio.timeout(within):
                found = await source.list_tools()
        except TimeoutError as exc:
            raise ConfigurationError(
                f"agent {self.agent_id!r}: listing the tools of {source!r} took over {within:g} s"
            ) from exc
        except ConfigurationError:
            raise
        except Exception as exc:
            raise ConfigurationError(
                f"agent {self.agent_id!r}: could not list the tools of {source!r}: {exc}"
            ) from exc
        try:
            return normalize_tools(found)
        except Exception as exc:
            raise ConfigurationError(
                f"agent {self.agent_id!r}: {source!r} listed something that is not tools: {exc}"
            ) from exc


async def all_or_none(calls: Sequence[Awaitable[T]]) -> list[T]:
    """Every call's result, concurrently; the first failure cancels the others (no listing goes
    on starting servers after the start has failed) and is raised as itself."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_awaited(call)) for call in calls]
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return [task.result() for task in tasks]


async def _awaited(call: Awaitable[T]) -> T:
    return await call
