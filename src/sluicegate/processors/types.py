"""Names for processor arrays and the data a processor workflow passes between its steps.

`InputProcessor`, `OutputProcessor` and `ErrorProcessor` are what the three arrays of an
`Agent` hold: a `Processor` (or any object with an `id` and the hooks) or a committed processor
workflow. `ProcessorStepSchema` describes the data dict of a workflow step, for
`create_workflow(input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)` as in
the documents' workflow example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from sluicegate.processors.base import Processor
    from sluicegate.workflows.processor_workflow import ProcessorWorkflow

InputProcessor: TypeAlias = "Processor | ProcessorWorkflow"
"""An entry of `input_processors` (`process_input`, `process_input_step`, ...)."""
OutputProcessor: TypeAlias = "Processor | ProcessorWorkflow"
"""An entry of `output_processors` (`process_output_stream`, `process_output_step`, ...)."""
ErrorProcessor: TypeAlias = "Processor"
"""An entry of `error_processors` (`process_api_error`)."""


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
