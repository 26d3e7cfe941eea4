"""The run's spans in workflow code: made the same on every replay, exported once.

The agent loop runs as workflow code, and a workflow is replayed from its history whenever a
worker rebuilds it (another worker takes over the run, the cache evicted it, a run waits for
an approval). Each replay runs the loop again, so it would start its spans again: a new
`invoke_agent` span, new `chat` spans, each with fresh random ids (a new trace per replay).

Here, inside a workflow, the run's tracer (1) takes its trace and span ids from a generator
seeded with the workflow and run ids, so every replay makes the same ids in the same order
(the activities' spans, made under those ids, stay in the tree), (2) starts a span made during
replay at the workflow's recorded time, and (3) exports a span only when it ends live: a span
ended during replay (or during an eviction, which Temporal runs as a replay) was exported by
the execution that ended it first. No randomness or clock of the workflow is used.

A run's `invoke_agent` span also names its workflow (`sluicegate.durable.workflow_id`, the run
id, with its namespace and task queue), so the studio can link a run to Temporal's UI.

Deterministic ids need the OpenTelemetry SDK's tracer (its id generator is swapped on a copy);
with another tracer, spans are still exported once but a replay gets new ids.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from temporalio import workflow

from sluicegate.tracing import state
from sluicegate.tracing.attributes import DURABLE_NAMESPACE, DURABLE_TASK_QUEUE, DURABLE_WORKFLOW_ID


class _ReplayedIds:
    """Trace and span ids from a generator seeded with the run: the same on every replay."""

    def __init__(self, seed: str) -> None:
        self._random = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._random.getrandbits(128) or 1

    def is_trace_id_random(self) -> bool:
        """Seeded, so not W3C-random: samplers must not rely on the trace id's randomness."""
        return False


def _ended_live(span: Any) -> Any:
    """`span`, its `end` exporting only when the workflow is not replaying. The span itself, not
    a proxy: OpenTelemetry takes only its own `Span` objects as parents."""
    end = span.end

    def end_live(end_time: int | None = None) -> None:
        if not workflow.unsafe.is_replaying():
            end(end_time)

    span.end = end_live
    return span


class _WorkflowTracer:
    def __init__(self, tracer: Any) -> None:
        self._tracer = tracer

    def start_span(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if workflow.unsafe.is_replaying() and kwargs.get("start_time") is None:
            kwargs["start_time"] = workflow.time_ns()
        if name.startswith("invoke_agent"):
            info = workflow.info()
            kwargs["attributes"] = {
                **(kwargs.get("attributes") or {}),
                DURABLE_WORKFLOW_ID: info.workflow_id,
                DURABLE_NAMESPACE: info.namespace,
                DURABLE_TASK_QUEUE: info.task_queue,
            }
        return _ended_live(self._tracer.start_span(name, *args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tracer, name)


def workflow_tracer(tracer: Any) -> Any:
    """`tracer` as the run's tracer in workflow code (see the module docstring); unchanged
    outside a workflow."""
    if not workflow.in_workflow():
        return tracer
    info = workflow.info()
    if hasattr(tracer, "id_generator"):
        tracer = copy.copy(tracer)
        tracer.id_generator = _ReplayedIds(f"{info.workflow_id}/{info.run_id}")
    return _WorkflowTracer(tracer)


def install() -> None:
    """Runs in workflows on this worker get the workflow tracer."""
    state.STATE.adapt_tracer = workflow_tracer
