"""What a worker refuses to run durably, at its start: what would do I/O inside the workflow.

Everything a run does to the world must be an activity (see `workflow`). A processor that asks
a model outside the stream (an LLM judge of input or output) and processor arrays given as
functions (their processors' stores cannot be found by a worker) are not, yet: an agent with
one is refused by name rather than run with calls that a replay would repeat.
"""

from __future__ import annotations

from typing import Any

from sluicegate.errors import ConfigurationError
from sluicegate.guardrails.detector import DetectorModel
from sluicegate.processors.base import implements, processor_id

_WORKFLOW_HOOKS = (
    "process_input",
    "process_input_step",
    "process_llm_request",
    "process_llm_response",
    "process_output_step",
    "process_output_result",
    "process_tool_call",
    "process_tool_result",
    "process_api_error",
)


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
            judges = [v for v in getattr(processor, "__dict__", {}).values() if isinstance(v, DetectorModel)]
            if judges and any(implements(processor, hook) for hook in _WORKFLOW_HOOKS):
                raise ConfigurationError(
                    f"agent {agent.id!r}: processor {processor_id(processor)!r} asks a model outside the "
                    "stream (an LLM judge); its calls are not activities yet, so it cannot run durably"
                )
