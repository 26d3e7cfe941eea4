"""`ProcessorStepSchema`: the data dict of a processor workflow step, as a pydantic model.

A module of its own because building a pydantic model is the costliest thing an import can do:
only code that names the schema (`create_workflow(input_schema=ProcessorStepSchema, ...)`)
pays for it, not every `import sluicegate.processors`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class ProcessorStepSchema(BaseModel):
    """The data a processor workflow hands from step to step. `phase` is the hook being run
    (`"process_input"`, ..., `"process_tool_result"`); the other fields are there when that
    hook has them. Extra keys (a step's own) are kept."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    phase: str
    messages: list[Any] | None = None
    system_messages: list[dict[str, Any]] | None = None
    part: Any = None
    step_number: int | None = None
    text: str | None = None
    finish_reason: str | None = None
    tool_calls: list[Any] | None = None
    result: Any = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_args: Any = None
