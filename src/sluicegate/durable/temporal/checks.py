"""What a worker refuses to run durably, at its start: what would do I/O inside the workflow.

Everything a run does to the world must be an activity (see `workflow`): model calls (each
model of a fallback list), tool calls, the judges of guardrails (`judges`), embeddings and
vector searches of the memory's semantic recall (`vectors`), store calls (`stores`). A
processor that embeds on its own (a `SemanticRecall` listed directly, not through `Memory`) and
a `ModelRouterProcessor` (its step's model would be called from workflow code; the model
activity calls the agent's own models) are not, yet: an agent with one is refused by name
rather than run with calls that a replay would repeat.

A processor array given as a function of the request context runs (the workflow and the model
activity call it, as a run in one process does per call), but its processors exist only per
call, so a worker cannot register activities for them at its start: one that asks a judge or
uses a store is refused when the function returns it (`check_returned`); list it instead.
"""

from __future__ import annotations

from typing import Any

from sluicegate.embeddings.base import Embedder
from sluicegate.errors import ConfigurationError
from sluicegate.processors.base import processor_id
from sluicegate.processors.builtin.model_router import ModelRouterProcessor


def check_durable(agent: Any) -> None:
    """Raise `ConfigurationError` naming what of `agent` cannot run durably."""
    for name in ("input_processors", "output_processors", "error_processors"):
        array = getattr(agent, name, None)
        if array is None:
            continue
        if not isinstance(array, (list, tuple)):
            continue  # a function: its processors are checked when it returns them
        for processor in array:
            check_processor(agent.id, processor)


def check_processor(agent_id: str, processor: Any) -> None:
    """Raise `ConfigurationError` if `processor` would do I/O from workflow code."""
    if isinstance(processor, ModelRouterProcessor):
        raise ConfigurationError(
            f"agent {agent_id!r}: processor {processor_id(processor)!r} picks each step's model, "
            "which a durable run cannot do yet (it calls the agent's own model)"
        )
    if isinstance(getattr(processor, "embedder", None), Embedder):
        raise ConfigurationError(
            f"agent {agent_id!r}: processor {processor_id(processor)!r} embeds on its own; in a "
            "durable run semantic recall goes through the agent's Memory (options semantic_recall)"
        )


def check_returned(agent_id: str, array: str, processor: Any, *, needs_activities: bool) -> None:
    """A processor an array function returned: `check_processor`'s refusals, and one that needs
    activities of its own (`needs_activities`: a judge asked from workflow code, a store),
    which a worker registers at its start for listed processors only."""
    check_processor(agent_id, processor)
    if needs_activities:
        raise ConfigurationError(
            f"agent {agent_id!r}: processor {processor_id(processor)!r}, returned by its {array} "
            "function, asks a judge or uses a store, whose calls a durable run makes as activities "
            "registered at the worker's start for listed processors only: list it in the agent's "
            f"{array}"
        )
