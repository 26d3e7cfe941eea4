"""`begin_run` without OpenTelemetry: the untraced start of a run in a process that never
imported it.

`sluicegate.tracing.spans` (the run's spans) needs OpenTelemetry's API, whose import costs
tens of milliseconds. A process that has not imported OpenTelemetry has no provider, no current
span and no propagated trace context, so a run there is untraced and needs none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sluicegate.tracing.state import opentelemetry_in_use

if TYPE_CHECKING:
    from sluicegate.tracing.spans import RunTrace


def begin_run(agent_id: str, run_id: str, model: Any) -> tuple[str, str, RunTrace | None]:
    """(run id, trace id, run trace) for a new run; see `sluicegate.tracing.spans.begin_run`."""
    if not opentelemetry_in_use():
        return run_id, "", None
    from sluicegate.tracing.spans import begin_run as begin_traced_run

    return begin_traced_run(agent_id, run_id, model)
