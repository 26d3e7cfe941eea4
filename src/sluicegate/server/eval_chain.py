"""Which processors an evaluation runs: an agent's array for the phase, or registered processors
by id (`sluicegate eval`, the studio's eval page). No FastAPI here, so the CLI needs no server
extra for it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sluicegate.errors import ConfigurationError
from sluicegate.processors.base import processor_id
from sluicegate.registry import Sluicegate
from sluicegate.request_context import RequestContext


async def select_chain(
    registry: Sluicegate,
    *,
    agent_id: str | None,
    processor_ids: Sequence[str] = (),
    phase: str,
) -> list[Any]:
    """The processors to evaluate, in order. With `agent_id`: that agent's input or output
    processors (a callable array called with an empty request context; memory's processors
    are left out), narrowed to `processor_ids` when given. Without: the registered processors
    named by `processor_ids`. An unknown agent or id is a `ConfigurationError` listing the known ones."""
    if phase not in ("input", "output"):
        raise ConfigurationError(f"phase must be 'input' or 'output', got {phase!r}")
    if agent_id is None:
        if not processor_ids:
            agents = list(registry.agents)
            if len(agents) != 1:
                listed = ", ".join(agents) or "none"
                raise ConfigurationError(
                    f"name an agent (--agent; agents: {listed}) or processors (--processor)"
                )
            agent_id = agents[0]
        else:
            known = registry.processors()
            missing = [pid for pid in processor_ids if pid not in known]
            if missing:
                raise ConfigurationError(
                    f"no processor {', '.join(map(repr, missing))}; processors: {', '.join(known) or 'none'}"
                )
            return [known[pid] for pid in processor_ids]
    agent = registry.get_agent(agent_id)
    if agent is None:
        raise ConfigurationError(f"no agent {agent_id!r}; agents: {', '.join(registry.agents) or 'none'}")
    name = f"{phase}_processors"
    # The agent's own resolution, so a callable array is checked as a run would check it.
    chain: list[Any] = await agent.resolve_processors(name, {}, RequestContext())
    if processor_ids:
        ids = [processor_id(p) for p in chain]
        missing = [pid for pid in processor_ids if pid not in ids]
        if missing:
            raise ConfigurationError(
                f"agent {agent_id!r} has no {phase} processor {', '.join(map(repr, missing))}; "
                f"its {phase} processors: {', '.join(ids) or 'none'}"
            )
        chain = [p for p in chain if processor_id(p) in processor_ids]
    if not chain:
        raise ConfigurationError(f"agent {agent_id!r} has no {phase} processors to evaluate")
    return chain
