"""Spend made inside a tool activity (a sub-agent's model calls), charged by the workflow.

In one process a sub-agent charges the cost guards of the runs above it directly: they offer
themselves as `budget.UsageSink`s in the request context (`USAGE_SINKS_KEY`). In a durable
run those guards live in the workflow, and the tool runs in an activity, on any worker, with a
request context rebuilt from JSON. So the activity offers a sink of its own that only collects
(`collect`), returns what was spent with the tool's result, and the workflow charges it to the
run's sinks (`charge`). The activity's result is recorded once in the run's history, so a
replay charges the same amounts again in workflow state, and each charge of a store is a
`reserve` carrying the run's next reservation key: a retried store activity is charged once.
What an attempt of the tool activity spent before its worker died is not charged (its result
never reached the workflow): the retried attempt runs the sub-agent again, and that is charged.
"""

from __future__ import annotations

from typing import Any

from sluicegate.budget import USAGE_SINKS_KEY, UsageSink, usage_sinks
from sluicegate.request_context import RequestContext
from sluicegate.stream.usage import Usage


class Spent:
    """What the model calls inside one tool activity used, summed per model (a price is per
    token, so one sum costs what its calls cost; the result stays small however many calls a
    sub-agent made). Usage a provider reported unusably is left out, as a cost guard leaves it."""

    def __init__(self) -> None:
        self._by_model: dict[str | None, Usage] = {}

    async def add(self, model_id: str | None, usage: Any) -> None:
        if not isinstance(usage, Usage) or usage.unusable:
            return
        known = self._by_model.get(model_id)
        self._by_model[model_id] = usage if known is None else known + usage

    def entries(self) -> list[dict[str, Any]]:
        """`[{"model", "usage"}]` (usage in the AI SDK V2 shape), for the activity's result."""
        return [{"model": model, "usage": usage.to_v2()} for model, usage in self._by_model.items()]


def collect(request_context: RequestContext) -> Spent:
    """Offer a collecting sink in the activity's request context (replacing whatever the
    caller's JSON had under the key: only `UsageSink` instances count anyway)."""
    spent = Spent()
    request_context.set(USAGE_SINKS_KEY, (UsageSink(spent.add),))
    return spent


async def charge(request_context: RequestContext | None, spent: Any) -> None:
    """Charge what a tool activity spent (`collect`'s entries) to the run's cost guards, in
    workflow code. Entries that are not of that shape are skipped (they came from this
    application's own activity, which writes only that shape)."""
    if request_context is None or not isinstance(spent, list) or not spent:
        return
    sinks = usage_sinks(request_context.get(USAGE_SINKS_KEY))
    for entry in spent:
        if not isinstance(entry, dict):
            continue
        model = entry.get("model")
        usage = Usage.from_v2(entry.get("usage"))
        for sink in sinks:
            await sink.charge(model if isinstance(model, str) else None, usage)
