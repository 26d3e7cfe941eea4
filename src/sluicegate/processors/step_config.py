"""What one model step runs with, and `prepare_step=` as the last input-step processor."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sluicegate.processors.args import ProcessInputStepArgs


@dataclass
class StepConfig:
    """What one step runs with; `process_input_step` results chain through it."""

    model: Any
    tools: dict[str, Any]
    tool_choice: Any = None
    active_tools: list[str] | None = None
    provider_options: dict[str, Any] | None = None
    model_settings: dict[str, Any] | None = None
    structured_output: Any = None


class PrepareStep:
    """`prepare_step=` wrapped as an input-step processor (it runs after the input processors)."""

    id = "prepare-step"
    name = "Prepare Step"

    def __init__(self, fn: Callable[[ProcessInputStepArgs], Any]) -> None:
        self._fn = fn

    async def process_input_step(self, args: ProcessInputStepArgs) -> Any:
        result = self._fn(args)
        return await result if inspect.isawaitable(result) else result
