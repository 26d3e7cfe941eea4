"""`Sluicegate`: the registry an application hands to the server (Mastra's `Mastra` class).

```python
from sluicegate import Agent, Sluicegate
from sluicegate.processors import UnicodeNormalizer
from sluicegate.storage import SQLiteStore

support = Agent(name="support", model="openai/gpt-5-mini", input_processors=[UnicodeNormalizer()])
app = Sluicegate(agents={"support": support}, processors=[UnicodeNormalizer()],
                 storage=SQLiteStore("memory.db"))
```

`sluicegate serve app.py` serves it. The registry holds only configuration: agents, processors
and tools are looked up by id, and conversations live in `storage` (or each agent's memory), so
any number of server processes can serve the same registry.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sluicegate.agent import Agent
from sluicegate.agent.tool_sources import DEFAULT_LIST_TIMEOUT, all_or_none
from sluicegate.errors import ConfigurationError
from sluicegate.processors.base import processor_id
from sluicegate.processors.validation import check_processor
from sluicegate.storage.base import MemoryStore
from sluicegate.tools import Tool, normalize_tools

if TYPE_CHECKING:
    from sluicegate.identity import IdentityResolver
    from sluicegate.mcp.server import MCPServer

MCP_SERVER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A served MCP server's id: one URL path segment (`/api/mcp/{id}/...`), nothing to escape."""


@dataclass(frozen=True)
class ProcessorUse:
    """Where a processor is configured: on which agent, in which array."""

    agent_id: str
    agent_name: str
    type: str  # "input" | "output" | "error"


def _keyed_agents(agents: Mapping[str, Agent] | Iterable[Agent] | None) -> dict[str, Agent]:
    if agents is None:
        return {}
    items = agents.items() if isinstance(agents, Mapping) else ((a.id, a) for a in agents)
    keyed: dict[str, Agent] = {}
    for key, agent in items:
        if not isinstance(agent, Agent):
            raise ConfigurationError(f"agents[{key!r}] is a {type(agent).__name__}, not a sluicegate.Agent")
        if not isinstance(key, str) or not key:
            raise ConfigurationError(f"agent keys must be non-empty strings, got {key!r}")
        if key in keyed:
            raise ConfigurationError(f"two agents are registered as {key!r}")
        keyed[key] = agent
    return keyed


def _keyed_processors(processors: Mapping[str, Any] | Iterable[Any] | None) -> dict[str, Any]:
    if processors is None:
        return {}
    items = (
        processors.items()
        if isinstance(processors, Mapping)
        else ((check_processor(p, f"processors[{i}]"), p) for i, p in enumerate(processors))
    )
    keyed: dict[str, Any] = {}
    for key, processor in items:
        check_processor(processor, f"processors[{key!r}]")
        if key in keyed:
            raise ConfigurationError(f"two processors are registered as {key!r}")
        keyed[key] = processor
    return keyed


def _keyed_mcp_servers(servers: Mapping[str, MCPServer] | None) -> dict[str, MCPServer]:
    if servers is None:
        return {}
    if not isinstance(servers, Mapping):
        raise ConfigurationError(
            "mcp_servers must map ids to MCPServer objects ({'main': server}), "
            f"got {type(servers).__name__}"
        )
    if not servers:
        return {}
    from sluicegate.mcp.server import MCPServer  # the `mcp` extra: only when servers are given

    keyed: dict[str, MCPServer] = {}
    for key, server in servers.items():
        if not isinstance(key, str) or not MCP_SERVER_ID.fullmatch(key):
            raise ConfigurationError(
                f"mcp_servers key {key!r} is not a server id (letters, digits, '_' and '-', "
                "starting with a letter or digit, up to 64): it is a path segment of /api/mcp/{id}"
            )
        if not isinstance(server, MCPServer):
            raise ConfigurationError(
                f"mcp_servers[{key!r}] is a {type(server).__name__}, not a sluicegate.mcp.MCPServer"
            )
        keyed[key] = server
    return keyed


def _static_array(value: Any) -> list[Any]:
    """The processors of an agent array, when it is a list (a callable array is per request)."""
    return list(value) if isinstance(value, (list, tuple)) else []


class Sluicegate:
    """Agents, processors, tools and storage, by id: what `sluicegate serve` exposes."""

    def __init__(
        self,
        *,
        agents: Mapping[str, Agent] | Iterable[Agent] | None = None,
        processors: Mapping[str, Any] | Iterable[Any] | None = None,
        tools: Mapping[str, Tool] | Iterable[Tool] | None = None,
        storage: MemoryStore | None = None,
        resolve_identity: IdentityResolver | None = None,
        mcp_servers: Mapping[str, MCPServer] | None = None,
    ) -> None:
        self._agents = _keyed_agents(agents)
        self._mcp_servers = _keyed_mcp_servers(mcp_servers)
        self._processors = _keyed_processors(processors)
        self._tools = normalize_tools(tools)
        if storage is not None and not isinstance(storage, MemoryStore):
            raise ConfigurationError(
                f"storage must be a sluicegate MemoryStore, got {type(storage).__name__}"
            )
        self.storage = storage
        if resolve_identity is not None and not callable(resolve_identity):
            raise ConfigurationError(
                f"resolve_identity must be a function of the request, got {type(resolve_identity).__name__}"
            )
        self.resolve_identity = resolve_identity
        """Who is calling: `resolve_identity(request) -> Identity | None` (sync or async), run by
        the server on every `/api` request; see `sluicegate.server.Identity`."""

    def __repr__(self) -> str:
        return f"Sluicegate(agents={sorted(self._agents)})"

    # ---------------------------------------------------------------- tool sources

    def _running_agents(self) -> list[Agent]:
        """The agents this app runs: its own and its MCP servers' (each once)."""
        found: dict[int, Agent] = {}
        for agent in [
            *self._agents.values(),
            *(a for s in self._mcp_servers.values() for a in s.agents.values()),
        ]:
            found.setdefault(id(agent), agent)
        return list(found.values())

    async def load_tools(self, within: float | None = DEFAULT_LIST_TIMEOUT) -> None:
        """List every agent's tool sources (the `MCPClient`s in their `tools=`; the app's agents
        and its MCP servers' agents), concurrently, each agent within `within` seconds: what a
        worker and the server do at their start, so an app module never awaits. Raises
        `ConfigurationError` naming the agent and the source (the first failure stops the rest)."""
        await all_or_none([agent.load_tools(within) for agent in self._running_agents()])

    async def close_tool_sources(self) -> None:
        """Close every agent's tool sources once (stopping the MCP servers they started); what a
        worker and the server do when they stop. Failures are raised after all were closed."""
        sources: dict[int, Any] = {}
        for agent in self._running_agents():
            for source in agent.tool_sources.sources:
                sources.setdefault(id(source), source)
        results = await asyncio.gather(*(s.close() for s in sources.values()), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    # ---------------------------------------------------------------- agents

    @property
    def agents(self) -> dict[str, Agent]:
        """The agents by registry key (a copy)."""
        return dict(self._agents)

    def get_agent(self, agent_id: str) -> Agent | None:
        """The agent registered under `agent_id`, else the one whose `id` or `name` it is."""
        agent = self._agents.get(agent_id)
        if agent is not None:
            return agent
        for candidate in self._agents.values():
            if agent_id in (candidate.id, candidate.name):
                return candidate
        return None

    # ---------------------------------------------------------------- processors

    def processors(self) -> dict[str, Any]:
        """Every processor by id: the registered ones, then those in the agents' static arrays."""
        found = dict(self._processors)
        for agent in self._agents.values():
            for name in ("input_processors", "output_processors", "error_processors"):
                for processor in _static_array(getattr(agent, name)):
                    found.setdefault(processor_id(processor), processor)
        return found

    def get_processor(self, pid: str) -> Any | None:
        return self.processors().get(pid)

    def processor_uses(self, pid: str) -> list[ProcessorUse]:
        """The agents (and arrays) that configure processor `pid`."""
        uses = []
        for key, agent in self._agents.items():
            for kind in ("input", "output", "error"):
                for processor in _static_array(getattr(agent, f"{kind}_processors")):
                    if processor_id(processor) == pid:
                        uses.append(ProcessorUse(agent_id=key, agent_name=agent.name, type=kind))
        return uses

    # ---------------------------------------------------------------- tools

    def tools(self) -> dict[str, Tool]:
        """Every tool by id: the registered ones, then the agents' tools."""
        found = dict(self._tools)
        for agent in self._agents.values():
            for tool in agent.tools.values():
                found.setdefault(tool.id, tool)
        return found

    def get_tool(self, tool_id: str) -> Tool | None:
        return self.tools().get(tool_id)

    # ---------------------------------------------------------------- MCP servers

    @property
    def mcp_servers(self) -> dict[str, MCPServer]:
        """The MCP servers served at `/api/mcp/{id}/...`, by id (a copy)."""
        return dict(self._mcp_servers)

    def get_mcp_server(self, server_id: str) -> MCPServer | None:
        return self._mcp_servers.get(server_id)

    # ---------------------------------------------------------------- storage

    def storage_for(self, agent_id: str | None) -> MemoryStore | None:
        """Where threads live: the agent's memory store when `agent_id` names one with
        memory, else the registry's storage."""
        if agent_id:
            agent = self.get_agent(agent_id)
            memory = getattr(agent, "memory", None) if agent is not None else None
            store = getattr(memory, "storage", None)
            if isinstance(store, MemoryStore):
                return store
        if self.storage is not None:
            return self.storage
        if not agent_id:
            for agent in self._agents.values():
                store = getattr(getattr(agent, "memory", None), "storage", None)
                if isinstance(store, MemoryStore):
                    return store
        return None
