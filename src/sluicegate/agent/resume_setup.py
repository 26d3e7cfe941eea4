"""The pieces `Agent` uses to set up human-in-the-loop runs: its store, the options it checks,
and a resumed run's state put back from its snapshot."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sluicegate.agent.decisions import Decision
from sluicegate.agent.run_loop import Resumption
from sluicegate.agent.suspension import restore_context, restore_messages, restore_state
from sluicegate.errors import ConfigurationError, SluicegateError

if TYPE_CHECKING:
    from sluicegate.agent.run import AgentRun
    from sluicegate.storage.suspended_runs import SuspendedRun, SuspendedRunStore

DEFAULT_SUSPENDED_RUN_TTL = timedelta(days=7)
"""How long a suspended run waits (`Agent(suspended_run_ttl=...)`); the store's default too."""

__all__ = [
    "DEFAULT_SUSPENDED_RUN_TTL",
    "check_require_approval",
    "check_store",
    "check_ttl",
    "restore_context",
    "restore_messages",
    "resume_into",
    "resumed_memory",
    "suspended_run_store",
]

_STORE_METHODS = ("save_suspended_run", "get_suspended_run", "claim_suspended_run", "list_suspended_runs")


def _is_store(value: Any) -> bool:
    return all(callable(getattr(value, name, None)) for name in _STORE_METHODS)


def check_store(explicit: Any) -> None:
    """`Agent(suspended_runs=...)`: a `SuspendedRunStore`, or None."""
    if explicit is not None and not _is_store(explicit):
        raise ConfigurationError(
            "suspended_runs must be a SuspendedRunStore (InMemorySuspendedRunStore, SQLiteStore, "
            f"PostgresStore), got {type(explicit).__name__}"
        )


def suspended_run_store(memory: Any) -> SuspendedRunStore:
    """Without `suspended_runs=`: the memory's storage when it keeps suspended runs (SQLite,
    PostgreSQL), so another process on the same database can resume; else a store of the agent's
    own, in this process (the storage package loads here, not at import)."""
    from sluicegate.storage.suspended_runs import InMemorySuspendedRunStore

    storage = getattr(memory, "storage", None)
    if storage is not None and _is_store(storage):
        return storage  # type: ignore[no-any-return]
    return InMemorySuspendedRunStore()


def check_ttl(ttl: Any) -> timedelta:
    if not isinstance(ttl, timedelta) or ttl <= timedelta(0):
        raise ConfigurationError(f"suspended_run_ttl must be a positive datetime.timedelta, got {ttl!r}")
    return ttl


def check_require_approval(value: Any) -> Any:
    if value is None or isinstance(value, bool) or callable(value):
        return value
    raise SluicegateError(
        "require_tool_approval must be True, False or a function (tool_name, args, request_context) -> bool, "
        f"got {value!r}"
    )


def resumed_memory(memory: Any, stored: SuspendedRun) -> dict[str, Any] | None:
    """The memory binding of a resumed run: the stored thread and resource, when the agent has memory."""
    if memory is None or stored.thread_id is None:
        return None
    option: dict[str, Any] = {"thread": stored.thread_id}
    if stored.resource_id is not None:
        option["resource"] = stored.resource_id
    return option


def resume_into(run: AgentRun, stored: SuspendedRun, decision: Decision) -> None:
    """The fresh run takes the stored progress, the claim, and where to start."""
    held = restore_state(run, stored.snapshot)
    if held is None:
        raise ValueError(f"suspended run {stored.run_id!r} has no held step in its snapshot")
    run.claimed = stored
    run.resumption = Resumption(held, decision)
    if run.require_approval is None and stored.snapshot.get("require_tool_approval"):
        # The first call asked for approvals; resuming without saying otherwise keeps asking.
        run.require_approval = True
