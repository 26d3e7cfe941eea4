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

import logging
from typing import Any

from sluicegate.agent.sub_agents import MAX_DEPTH, TOOL_PREFIX
from sluicegate.durable.temporal.judges import judges_in_workflow
from sluicegate.durable.temporal.stores import has_store
from sluicegate.embeddings.base import Embedder
from sluicegate.errors import ConfigurationError
from sluicegate.processors.base import KeepsStore, processor_id
from sluicegate.processors.builtin.model_router import ModelRouterProcessor
from sluicegate.storage.suspended_runs import InMemorySuspendedRunStore

log = logging.getLogger("sluicegate.durable")


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
    check_default_arrays(agent)


def check_default_arrays(agent: Any) -> None:
    """Processor arrays in the agent's `default_options`: the worker gives stores and judges
    activities for the agent's own arrays only, so a default array with a processor that
    keeps a store or asks a judge (or given as a function, whose processors it cannot see) is
    refused; set it as the agent's array, or on a variant agent (`copy_with`)."""
    defaults = getattr(agent, "default_options", None) or {}
    for name in ("input_processors", "output_processors", "error_processors"):
        array = defaults.get(name)
        if array is None:
            continue
        if not isinstance(array, (list, tuple)):
            raise ConfigurationError(
                f"agent {agent.id!r}: default_options {name} is a function; a durable worker runs "
                f"listed default arrays only: set {name}= on the agent (or on a variant, copy_with)"
            )
        for processor in array:
            check_processor(agent.id, processor)
            if has_store(processor) or judges_in_workflow(processor):
                raise ConfigurationError(
                    f"agent {agent.id!r}: processor {processor_id(processor)!r} in default_options "
                    f"{name} asks a judge or uses a store, whose calls a durable run makes as "
                    f"activities for the agent's own arrays only: set {name}= on the agent (or on "
                    "a variant, copy_with)"
                )


def check_processor(agent_id: str, processor: Any) -> None:
    """Raise `ConfigurationError` if `processor` would do I/O from workflow code."""
    if isinstance(processor, ModelRouterProcessor):
        raise ConfigurationError(
            f"agent {agent_id!r}: processor {processor_id(processor)!r} picks each step's model, "
            "which a durable run cannot do yet (it calls the agent's own model)"
        )
    if has_store(processor) and not isinstance(processor, KeepsStore):
        raise ConfigurationError(
            f"agent {agent_id!r}: processor {processor_id(processor)!r} keeps a store but has no "
            "with_store(store) method, by which a durable run gives it a store whose calls are "
            "activities: subclass Processor (its with_store copies the processor) or define one"
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


def waiting_sub_agents(agent: Any, chain: tuple[tuple[str, Any], ...] = ()) -> list[tuple[str, Any]]:
    """The sub-agents of `agent` (at any depth) that keep a waiting run when a tool below them
    waits for a person (`require_approval`, or a `suspend_schema`/`resume_schema`): the one
    whose tool it is and every sub-agent on the way to it, each once, as `(path, sub-agent)`
    (the path as an approval card names it: `researcher › clerk › delete_record`). No deeper
    than sub-agents run (`MAX_DEPTH`): a cycle of sub-agents ends there."""
    out: list[tuple[str, Any]] = []
    if len(chain) >= MAX_DEPTH:
        return out
    for name, sub in (getattr(agent, "agents", None) or {}).items():
        here = (*chain, (name, sub))
        own = getattr(sub, "agents", None) or {}
        for tool_name, tool in (getattr(sub, "tools", None) or {}).items():
            if tool_name.startswith(TOOL_PREFIX) and tool_name[len(TOOL_PREFIX) :] in own:
                continue  # its own sub-agent: looked at below
            waits = getattr(tool, "require_approval", False) is True or any(
                getattr(tool, schema, None) is not None for schema in ("suspend_schema", "resume_schema")
            )
            if waits:
                path = " › ".join([*(n for n, _ in here), tool_name])
                out.extend((path, holder) for _, holder in here if all(holder is not s for _, s in out))
        out.extend(p for p in waiting_sub_agents(sub, here) if all(p[1] is not seen for _, seen in out))
    return out


def warn_local_sub_agent_runs(agent: Any) -> None:
    """A sub-agent that keeps a waiting run (see `waiting_sub_agents`) keeps it in its own
    `suspended_run_store`; the parent's workflow resumes it from whichever worker runs the
    resumed tool activity. A store in one process's memory fails that resume on any other
    worker, or after a restart (the call ends with an error the model reads; nothing runs):
    said once, at the worker's start."""
    for path, sub in waiting_sub_agents(agent):
        if isinstance(sub.suspended_run_store, InMemorySuspendedRunStore):
            log.warning(
                "agent %r: sub-agent %r keeps its runs waiting on %s in this process's memory; "
                "with several workers or a restart, resuming them fails: give it a Memory with "
                "SQLite/PostgreSQL storage or suspended_runs= a shared store",
                agent.id,
                sub.name,
                path,
            )
