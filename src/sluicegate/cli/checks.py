"""What `serve` refuses to start with, rather than failing every request later."""

from __future__ import annotations

from sluicegate.errors import ConfigurationError
from sluicegate.registry import Sluicegate
from sluicegate.stream.run_log import InMemoryRunLog


def refuse_local_run_logs(registry: Sluicegate) -> None:
    """`serve --temporal`: the runs happen in the workers' processes and every stream is read
    from the agent's run log, so a log only its own process can read (the default
    `InMemoryRunLog`, or none) would answer every stream "not in the run log"."""
    local = [
        key
        for key, agent in registry.agents.items()
        if agent.run_log is None or isinstance(agent.run_log, InMemoryRunLog)
    ]
    if local:
        names = ", ".join(repr(key) for key in local)
        raise ConfigurationError(
            f"serve --temporal: agent {names} keeps its runs in this process only (the default in-memory "
            "run log, or run_log=None), but durable runs happen in the workers' processes, so no stream "
            "could be read here. Give it a log the workers and this server share: "
            "Agent(run_log=RedisRunLog(url)) (the redis extra; see docs/durable.md)"
        )
