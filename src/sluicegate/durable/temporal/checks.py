"""What a worker refuses to run durably, at its start: what would do I/O inside the workflow.

Everything a run does to the world must be an activity (see `workflow`): model calls (each
model of a fallback list), tool calls, the judges of guardrails (`judges`), embeddings and
vector searches of the memory's semantic recall (`vectors`), store calls (`stores`). Processor
arrays given as functions (their processors cannot be found by a worker), a processor that
embeds on its own (a `SemanticRecall` listed directly, not through `Memory`) and a
`ModelRouterProcessor` (its step's model would be called from workflow code; the model
activity calls the agent's own models) are not, yet: an agent with one is refused by name
rather than run with calls that a replay would repeat.
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
            raise ConfigurationError(
                f"agent {agent.id!r}: {name} given as a function cannot run durably (list the processors)"
            )
        for processor in array:
            if isinstance(processor, ModelRouterProcessor):
                raise ConfigurationError(
                    f"agent {agent.id!r}: processor {processor_id(processor)!r} picks each step's model, "
                    "which a durable run cannot do yet (it calls the agent's own model)"
                )
            if isinstance(getattr(processor, "embedder", None), Embedder):
                raise ConfigurationError(
                    f"agent {agent.id!r}: processor {processor_id(processor)!r} embeds on its own; in a "
                    "durable run semantic recall goes through the agent's Memory (options semantic_recall)"
                )
