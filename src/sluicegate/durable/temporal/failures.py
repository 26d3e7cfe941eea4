"""Exceptions across the activity boundary, both ways.

In an activity: a `TripWire` and a tool's invalid input are non-retryable (retrying cannot
change a guardrail's verdict or the arguments); an `APICallError` is retryable exactly when
the provider said so, and Temporal's retry policy, not the provider client, does the retrying.
In the workflow: the activity's final failure becomes the exception the agent loop handles, so
error processors, `tool-error` chunks and tripwires behave as in a run in one process.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ActivityError, ApplicationError

from sluicegate.errors import APICallError, SluicegateError, TripWire
from sluicegate.tools.tool import ToolInputError

TRIPWIRE = "TripWire"
API_CALL = "APICallError"
TOOL_INPUT = "ToolInputError"
TOO_LARGE = "PayloadTooLargeError"
SLUICEGATE = "SluicegateError"


class PayloadTooLargeError(SluicegateError):
    """What a durable run would send across the workflow boundary is over Temporal's limit."""

    def __init__(self, what: str, size: int = 0, limit: int = 0) -> None:
        super().__init__(
            f"{what} is {size} bytes serialized; Temporal accepts at most {limit} bytes in one payload "
            "(keep large data in storage and pass its id)"
            if limit
            else what
        )
        self.what = what
        self.size = size
        self.limit = limit


class ActivityRefusedError(SluicegateError):
    """A sluicegate error raised inside an activity (a store refusing a call: another
    resource's thread, a budget), raised again in the workflow; `error` names its type."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(f"{error}: {message}")
        self.error = error


def to_application_error(exc: BaseException, *, details: bool = False) -> BaseException:
    """The failure an activity raises for `exc`. A provider error crosses as its
    `public_message`: the failure is kept in Temporal's history, which outlives the run and
    Temporal's UI shows; with `details` (the agent's `provider_error_details` opt-in) the
    provider's own text crosses, as it reaches the agent's caller in one process."""
    if isinstance(exc, TripWire):
        return ApplicationError(
            exc.reason,
            {"retry": exc.retry, "metadata": exc.metadata, "processorId": exc.processor_id},
            type=TRIPWIRE,
            non_retryable=True,
        )
    if isinstance(exc, APICallError):
        return ApplicationError(
            str(exc) if details else exc.public_message,
            {
                "statusCode": exc.status_code,
                "isRetryable": exc.is_retryable,
                "provider": exc.provider,
                "code": getattr(exc, "code", None),
            },
            type=API_CALL,
            non_retryable=not exc.is_retryable,
        )
    if isinstance(exc, ToolInputError):
        return ApplicationError(str(exc), type=TOOL_INPUT, non_retryable=True)
    if isinstance(exc, PayloadTooLargeError):
        return ApplicationError(str(exc), type=TOO_LARGE, non_retryable=True)
    if isinstance(exc, SluicegateError):
        # sluicegate's own errors (a thread owned by another resource, a budget refused) are
        # answers, not outages: not retried, and raised again as themselves in the workflow.
        return ApplicationError(str(exc), {"error": type(exc).__name__}, type=SLUICEGATE, non_retryable=True)
    return exc


def from_activity_error(exc: BaseException) -> BaseException:
    """The exception the agent loop sees for an activity's final failure."""
    cause: Any = exc.cause if isinstance(exc, ActivityError) else exc
    if not isinstance(cause, ApplicationError):
        return exc
    details = cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
    if cause.type == TRIPWIRE:
        return TripWire(
            cause.message,
            retry=bool(details.get("retry")),
            metadata=details.get("metadata"),
            processor_id=details.get("processorId"),
        )
    if cause.type == API_CALL:
        return APICallError(
            cause.message,
            status_code=details.get("statusCode"),
            is_retryable=bool(details.get("isRetryable")),
            provider=details.get("provider"),
            code=details.get("code"),
        )
    if cause.type == TOOL_INPUT:
        return ToolInputError(cause.message)
    if cause.type == TOO_LARGE:
        return PayloadTooLargeError(cause.message)
    if cause.type == SLUICEGATE:
        return ActivityRefusedError(str(details.get("error") or "SluicegateError"), cause.message)
    return RuntimeError(f"{cause.type or 'activity'} failed: {cause.message}")
