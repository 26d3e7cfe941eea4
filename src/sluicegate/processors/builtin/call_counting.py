"""What `ToolCallLimit` and `ModelCallLimit` share: counting calls against limits, per run (in
the processor's run state) or per memory thread (in a `CallCountStore`), a call reserved before
it is made.

A run's counters are checked and counted with no `await` in between, so the concurrent tool
calls of one step cannot pass the same check. A thread's counters are reserved in the store,
atomically for all the counters of the call (see `sluicegate.storage.call_counts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from sluicegate.request_context import THREAD_ID_KEY
from sluicegate.storage.call_counts import (
    CallCountStore,
    CallReservation,
    InMemoryCallCountStore,
    checked_key,
)

Scope = Literal["run", "thread"]

RUN_COUNTS = "call_counts"
"""The run-state key of a run's counters (carried over a suspension by `suspend_state`)."""


def checked_limit(what: str, limit: object) -> int:
    """A limit: a non-negative int (not a bool), or a `TypeError`/`ValueError` naming `what`."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"{what} must be an int (calls allowed), got {limit!r}")
    if limit < 0:
        raise ValueError(f"{what} must not be negative, got {limit}")
    return limit


def checked_scope(scope: object) -> Scope:
    if scope not in ("run", "thread"):
        raise ValueError(f"scope must be 'run' or 'thread', got {scope!r}")
    return "run" if scope == "run" else "thread"


def checked_store(store: object) -> CallCountStore:
    if store is None:
        return InMemoryCallCountStore()
    if not isinstance(store, CallCountStore):
        raise TypeError(
            f"store must be a CallCountStore (reserve_calls, call_counts), such as SQLiteStore, "
            f"PostgresStore or InMemoryCallCountStore; got {type(store).__name__}"
        )
    return store


class CallCounter:
    """Counters of one kind of call (`kind`: "tool" or "model"), kept per run or per thread.
    The store is passed on each call, not kept: a durable run swaps the processor's `store`
    for a stand-in whose calls are activities."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def thread_of(self, request_context: Any) -> str | None:
        value = request_context.get(THREAD_ID_KEY) if request_context is not None else None
        return value if isinstance(value, str) and value else None

    async def reserve(
        self, args: Any, limits: Mapping[str, tuple[Scope, int]], store: CallCountStore
    ) -> tuple[CallReservation, Scope]:
        """Reserve one call on every counter of `limits` (`name -> (scope, limit)`), all or
        nothing: the run's counters are checked and counted first, then the thread's reserved
        in the store; a thread refusal gives the run's back (a concurrent call of the run that
        saw them meanwhile may be refused: limits err on the side of refusing). Answers the
        reservation, its names being the counters' names, and the refusing scope (on a grant:
        "run")."""
        thread_limits = {name: limit for name, (scope, limit) in limits.items() if scope == "thread"}
        run_limits = {name: limit for name, (scope, limit) in limits.items() if scope == "run"}
        thread_id = self.thread_of(args.request_context)
        if thread_limits and thread_id is None:
            run_limits.update(thread_limits)  # no thread: the run is the widest scope there is
            thread_limits = {}
        counts: dict[str, int] = {}
        run = args.state.setdefault(RUN_COUNTS, {})
        if run_limits:  # checked and counted with no await between: concurrent calls see each other
            for name in sorted(run_limits):
                if run.get(name, 0) >= run_limits[name]:
                    return CallReservation(False, {n: run.get(n, 0) for n in run_limits}, name), "run"
            for name in run_limits:
                run[name] = counts[name] = run.get(name, 0) + 1
        if thread_limits:
            try:
                await _check_owner(args, store)
                keys = {self._key(thread_id or "", name): name for name in thread_limits}
                held = await store.reserve_calls({key: thread_limits[name] for key, name in keys.items()})
            except BaseException:
                _give_back(run, run_limits)
                raise
            named = {keys[key]: count for key, count in held.counts.items()}
            if not held.granted:
                _give_back(run, run_limits)  # the call is not made: it counts nowhere
                return CallReservation(False, named, keys.get(held.exceeded or "")), "thread"
            counts.update(named)
        return CallReservation(True, counts), "run"

    def _key(self, thread_id: str, name: str) -> str:
        return checked_key(f"{self.kind}-calls:{len(thread_id)}:{thread_id}:{name}")


async def _check_owner(args: Any, store: CallCountStore) -> None:
    """With a memory store as the counter store, a thread's counters are only spent by the
    thread's own resource (`ThreadAccessError` otherwise), as the memory processors check."""
    from sluicegate.storage.base import MemoryStore

    if isinstance(store, MemoryStore):
        from sluicegate.memory.ownership import readable_context

        await readable_context(store, args.request_context, args.state)


def _give_back(run: dict[str, int], names: Mapping[str, int]) -> None:
    for name in names:
        run[name] -= 1


def carried_counts(state: dict[str, Any]) -> dict[str, Any]:
    """A run's counters, kept over a suspension (human in the loop): without them a run limit
    would start again from zero on every approval."""
    counts = state.get(RUN_COUNTS)
    return {RUN_COUNTS: dict(counts)} if isinstance(counts, dict) else {}
