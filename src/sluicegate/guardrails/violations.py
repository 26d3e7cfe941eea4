"""Acting on a detection: block, warn (logged and reported to `on_violation`) or let the
caller drop or rewrite the content."""

from __future__ import annotations

import logging
from typing import Any

from sluicegate.processors.base import Processor, notify_violation

WITHHELD_TOOL_RESULT = "[tool result withheld by {label}]"


def report(processor: Processor, message: str, detail: Any) -> None:
    """Tell `processor.on_violation` about a warn-strategy detection; its errors are swallowed."""
    notify_violation(processor, message, detail)


def enforce(
    processor: Processor,
    strategy: str,
    message: str,
    detail: dict[str, Any],
    abort: Any,
    *,
    label: str,
    log: logging.Logger,
) -> None:
    """Act on a detection: `"block"` aborts with `detail` as tripwire metadata, `"warn"` logs and
    reports to `on_violation`; any other strategy (the caller then drops or rewrites the
    content) is logged at info level."""
    if strategy == "block":
        abort(message, metadata=detail)
    elif strategy == "warn":
        log.warning("[%s] %s", label, message)
        report(processor, message, detail)
    else:
        log.info("[%s] %s (%s)", label, message, strategy)
