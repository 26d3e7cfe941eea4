"""Error processors every agent gets unless it opts out (`Agent(auto_error_processors=False)`).

The documents call `PrefillErrorHandler` auto-injected and configuration-free: it runs after
every configured `process_api_error` (so the agent's own error processors see a failure first),
and it only acts on the "assistant message prefill" rejection. It does not count as an error
processor for the default retry cap (`max_processor_retries`): an agent that configured none
keeps "a retry request is an abort" for its guardrails. The runner builds its entry only when a
call fails, so a run that never fails pays nothing for it. It keeps no state of its own, so one
instance serves every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sluicegate.processors.builtin.prefill_error_handler import PrefillErrorHandler

_PREFILL = PrefillErrorHandler()


def auto_error_processors(*arrays: Sequence[Any]) -> list[Any]:
    """The error processors to add after the configured ones: a `PrefillErrorHandler`, unless
    one is configured already."""
    for array in arrays:
        if any(isinstance(processor, PrefillErrorHandler) for processor in array):
            return []
    return [_PREFILL]
