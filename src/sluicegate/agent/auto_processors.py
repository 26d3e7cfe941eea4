"""Error processors every agent gets unless it opts out (`Agent(auto_error_processors=False)`).

The documents call `PrefillErrorHandler` auto-injected and configuration-free: it runs last, so
any error processor of the agent's own sees a failure first, and it only acts on the
"assistant message prefill" rejection. It does not count as an error processor for the default
retry cap (`max_processor_retries`): an agent that configured none keeps "a retry request is an
abort" for its guardrails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sluicegate.processors.builtin.prefill_error_handler import PrefillErrorHandler


def with_auto_error_processors(error_array: list[Any], *other_arrays: Sequence[Any]) -> list[Any]:
    """`error_array` with a `PrefillErrorHandler` appended, unless one is already configured."""
    for array in (error_array, *other_arrays):
        if any(isinstance(processor, PrefillErrorHandler) for processor in array):
            return error_array
    handler = PrefillErrorHandler()
    handler.auto_injected = True
    return [*error_array, handler]
