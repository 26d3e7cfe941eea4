"""`ModelCallLimit`: cap how many model calls a run, or a memory thread, makes.

Each call is reserved in `process_llm_request`, right before the provider is called, so a call
refused by its limit is never sent. Every request this processor sees counts: a step retried
(by a processor or a stream retry) or moved to a fallback model makes another request.
"""

from __future__ import annotations

from typing import Any, Self

from sluicegate.processors.args import ProcessLLMRequestArgs
from sluicegate.processors.base import Processor
from sluicegate.processors.builtin.call_counting import (
    CallCounter,
    Scope,
    carried_counts,
    checked_limit,
    checked_store,
)
from sluicegate.storage.call_counts import CallCountStore


class ModelCallLimit(Processor):
    """Limits on model calls: `run=` per request, `thread=` across every run of the memory
    thread (counted in `store`; without a thread in the request it counts in the run). When a
    limit is reached the run ends with a tripwire naming it; the refused call is not made.

    - `store`: a `CallCountStore` for thread counters (`SQLiteStore`, `PostgresStore`; default
      an `InMemoryCallCountStore` of this processor). Reservations are atomic: concurrent runs
      of one thread never exceed the limit, not even by one call.
    - `on_violation`: called with each refusal.
    """

    id = "model-call-limit"
    name = "Model Call Limit"

    def __init__(
        self,
        *,
        run: int | None = None,
        thread: int | None = None,
        store: CallCountStore | None = None,
        on_violation: Any = None,
    ) -> None:
        super().__init__()
        if run is None and thread is None:
            raise ValueError("ModelCallLimit needs a limit: run=..., thread=... or both")
        self.run = checked_limit("run", run) if run is not None else None
        self.thread = checked_limit("thread", thread) if thread is not None else None
        self.store: CallCountStore = checked_store(store)
        self.counter = CallCounter("model")
        if on_violation is not None:
            self.on_violation = on_violation

    def with_store(self, store: Any) -> Self:
        """A copy counting in `store` (checked as the constructor checks it)."""
        return super().with_store(checked_store(store))

    async def process_llm_request(self, args: ProcessLLMRequestArgs) -> None:
        limits: dict[str, tuple[Scope, int]] = {}
        if self.run is not None:
            limits["run"] = ("run", self.run)
        if self.thread is not None:
            limits["thread"] = ("thread", self.thread)
        reservation, scope = await self.counter.reserve(args, limits, self.store)
        if reservation.granted:
            return
        limited = reservation.exceeded or scope
        limit = self.run if limited == "run" else self.thread
        args.abort(
            f"Model call limit reached: {limit} model calls per {scope}",
            metadata={"limit": limit, "scope": scope, "counts": reservation.counts},
        )

    def suspend_state(self, state: dict[str, Any]) -> dict[str, Any]:
        return carried_counts(state)
