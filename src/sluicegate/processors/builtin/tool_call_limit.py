"""`ToolCallLimit`: cap how many times tools are called, per run or per memory thread.

Each call is reserved in `process_tool_call`, right before the tool runs; a call refused by its
limit never runs. What counts: every call that reaches this processor's `process_tool_call` and
is granted (the tool runs, or fails validation or execution after it). What does not: a call a
person declined (it never reaches `process_tool_call`), a call another processor aborted or
refused first (put `ToolCallLimit` after it), a call naming an unavailable tool or with
unparseable arguments, and a call this limit refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Self

from sluicegate.processors.args import ProcessToolCallArgs
from sluicegate.processors.base import Processor, report_violation
from sluicegate.processors.builtin.call_counting import (
    CallCounter,
    Scope,
    carried_counts,
    checked_limit,
    checked_scope,
    checked_store,
)
from sluicegate.storage.call_counts import CallCountStore

OnLimit = Literal["tripwire", "answer"]

ALL_TOOLS = "*"
"""The key of `limits` that counts every tool call."""


class ToolCallLimit(Processor):
    """Limits on tool calls: `limits={"*": 20, "send_email": 2}` (`"*"` counts every call).

    - `scope`: `"run"` (this request; default) or `"thread"` (every run of the memory thread,
      counted in `store`; without a thread in the request the run is the scope).
    - `on_limit`: `"tripwire"` (default) ends the run with a tripwire naming the limit;
      `"answer"` refuses the call only (`args.reject`): the tool does not run, the model reads
      that it may not call it again (as the call's error result), the client gets a
      `tool-output-denied` naming this processor, and the model answers without it.
    - `store`: a `CallCountStore` for thread counters (`SQLiteStore`, `PostgresStore`; default
      an `InMemoryCallCountStore` of this processor). Reservations are atomic: concurrent runs
      of one thread never exceed a limit, not even by one call.
    - `on_violation`: called with each refusal.

    Place it in `output_processors` (where `process_tool_call` runs), after any processor that
    may refuse a call first.
    """

    id = "tool-call-limit"
    name = "Tool Call Limit"

    def __init__(
        self,
        *,
        limits: Mapping[str, int],
        scope: Scope = "run",
        on_limit: OnLimit = "tripwire",
        store: CallCountStore | None = None,
        on_violation: Any = None,
    ) -> None:
        super().__init__()
        if not isinstance(limits, Mapping) or not limits:
            raise ValueError('limits must be a non-empty mapping of tool name (or "*") to calls allowed')
        checked: dict[str, int] = {}
        for tool_name, limit in limits.items():
            if not isinstance(tool_name, str) or not tool_name:
                raise TypeError(f"limits keys must be tool names (or '*'), got {tool_name!r}")
            if "*" in tool_name and tool_name != ALL_TOOLS:
                raise ValueError(
                    f"limits key {tool_name!r}: name one tool, or '*' for every call (no patterns)"
                )
            checked[tool_name] = checked_limit(f"limits[{tool_name!r}]", limit)
        if on_limit not in ("tripwire", "answer"):
            raise ValueError(f"on_limit must be 'tripwire' or 'answer', got {on_limit!r}")
        self.limits = checked
        self.scope: Scope = checked_scope(scope)
        self.on_limit: OnLimit = on_limit
        self.store: CallCountStore = checked_store(store)
        self.counter = CallCounter("tool")
        if on_violation is not None:
            self.on_violation = on_violation

    def with_store(self, store: Any) -> Self:
        """A copy counting in `store` (checked as the constructor checks it)."""
        return super().with_store(checked_store(store))

    async def process_tool_call(self, args: ProcessToolCallArgs) -> None:
        limits = {
            name: (self.scope, self.limits[name])
            for name in (ALL_TOOLS, args.tool_name)
            if name in self.limits
        }
        if not limits:
            return
        reservation, scope = await self.counter.reserve(args, limits, self.store)
        if reservation.granted:
            return
        limited = reservation.exceeded or ALL_TOOLS
        limit = self.limits[limited]
        what = "tool calls" if limited == ALL_TOOLS else f"calls of tool {limited!r}"
        message = f"Tool call limit reached: {limit} {what} per {scope}"
        detail = {
            "limit": limit,
            "tool": limited,
            "scope": scope,
            "tool_name": args.tool_name,
            "tool_call_id": args.tool_call_id,
            "counts": reservation.counts,
        }
        if self.on_limit == "tripwire":
            args.abort(message, metadata=detail)
        await report_violation(self, message, detail)
        told = (
            "Tool call limit reached: make no more tool calls; answer with what you have."
            if limited == ALL_TOOLS
            else f"Tool call limit reached: {limited!r} is no longer available; do not call it again, "
            "answer without it."
        )
        args.reject(told)

    def suspend_state(self, state: dict[str, Any]) -> dict[str, Any]:
        return carried_counts(state)
