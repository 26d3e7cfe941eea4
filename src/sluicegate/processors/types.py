"""Names for processor arrays and the data a processor workflow passes between its steps.

`InputProcessor`, `OutputProcessor` and `ErrorProcessor` are what the three arrays of an
`Agent` hold: a `Processor` (or any object with an `id` and the hooks) or a committed processor
workflow. `ProcessorStepSchema` describes the data dict of a workflow step, for
`create_workflow(input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)` as in
the documents' workflow example (a pydantic model, in `sluicegate.processors.step_schema`, built
on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from sluicegate.processors.base import Processor
    from sluicegate.processors.step_schema import ProcessorStepSchema as ProcessorStepSchema
    from sluicegate.processors.workflow import ProcessorWorkflow

InputProcessor: TypeAlias = "Processor | ProcessorWorkflow"
"""An entry of `input_processors` (`process_input`, `process_input_step`, ...)."""
OutputProcessor: TypeAlias = "Processor | ProcessorWorkflow"
"""An entry of `output_processors` (`process_output_stream`, `process_output_step`, ...)."""
ErrorProcessor: TypeAlias = "Processor"
"""An entry of `error_processors` (`process_api_error`)."""


def __getattr__(name: str) -> Any:
    # `ProcessorStepSchema` is a pydantic model: built on first use, not by every import.
    if name == "ProcessorStepSchema":
        from sluicegate.processors.step_schema import ProcessorStepSchema

        return ProcessorStepSchema
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
