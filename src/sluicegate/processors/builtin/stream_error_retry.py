"""`StreamErrorRetryProcessor`: retry transient provider errors, including ones that arrive
after the stream started.

An error is retryable when, anywhere along its cause chain (`cause` / `__cause__`, and the raw
stream event an `APICallError` carries in `data`), a matcher accepts it or provider metadata
says `is_retryable`. Matchers run first; `is_retryable_openai_responses_stream_error` is always
one of them.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sluicegate.processors.args import ProcessAPIErrorArgs, ProcessAPIErrorResult
from sluicegate.processors.base import Processor

StreamErrorRetryMatcher = Callable[[Any], bool]
DelayMs = float | Callable[[ProcessAPIErrorArgs], "float | Awaitable[float]"]

DEFAULT_MAX_RETRIES = 1
RETRYABLE_OPENAI_ERROR_CODES: tuple[str, ...] = (
    "rate_limit",
    "server_error",
    "internal_error",
    "timeout",
    "temporarily_unavailable",
    "service_unavailable",
    "overloaded",
)
_RETRY_GUIDANCE = re.compile(r"you can retry your request", re.IGNORECASE)


def _field(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return value.get(key)
    return getattr(value, key, None)


def _openai_error_payload(error: Any) -> dict[str, Any] | None:
    kind = _field(error, "type")
    if kind == "error":
        inner = _field(error, "error")
        if isinstance(inner, dict):
            return inner
        # OpenAI also documents the flat form: {"type": "error", "code", "message", ...}
        if isinstance(error, dict) and ("code" in error or "message" in error):
            return error
    elif kind == "response.failed":
        response = _field(error, "response")
        inner = _field(response, "error") if response is not None else None
        return inner if isinstance(inner, dict) else None
    return None


def is_retryable_openai_responses_stream_error(error: Any) -> bool:
    """Whether `error` is an OpenAI Responses `error` / `response.failed` event worth retrying:
    a transient error code, or a message that says the request can be retried."""
    payload = _openai_error_payload(error)
    if payload is None:
        return False
    code = payload.get("code") or payload.get("type")
    if isinstance(code, str) and any(marker in code.lower() for marker in RETRYABLE_OPENAI_ERROR_CODES):
        return True
    message = payload.get("message")
    return isinstance(message, str) and bool(_RETRY_GUIDANCE.search(message))


def _links(candidate: Any) -> list[Any]:
    """What to look at after `candidate`: the raw event it carries, then its cause."""
    out: list[Any] = []
    if isinstance(candidate, BaseException):
        data = getattr(candidate, "data", None)
        if data is not None:
            out.append(data)
        cause = getattr(candidate, "cause", None) or candidate.__cause__
        if cause is not None:
            out.append(cause)
    elif isinstance(candidate, dict) and candidate.get("cause") is not None:
        out.append(candidate["cause"])
    return out


def _has_retryable_metadata(candidate: Any) -> bool:
    flag = (
        candidate.get("isRetryable")
        if isinstance(candidate, dict)
        else getattr(candidate, "is_retryable", None)
    )
    return flag is True


class StreamErrorRetryProcessor(Processor):
    """Retries transient errors, mid-stream ones included, up to `max_retries` times.

    ```python
    from sluicegate import Agent
    from sluicegate.processors import StreamErrorRetryProcessor

    def is_connection_reset(error):
        return "econnreset" in str(error).lower()

    agent = Agent(name="a", instructions="...", model="openai/gpt-5",
                  error_processors=[StreamErrorRetryProcessor(
                      max_retries=2,
                      delay_ms=lambda args: min(1000 * 2 ** args.retry_count, 30000),
                      matchers=[is_connection_reset])])
    ```

    `delay_ms` (a number or a callable of the `process_api_error` args, sync or async) waits
    before the retry is signalled; negative or non-finite delays count as 0. Messages are never
    changed.
    """

    id = "stream-error-retry-processor"
    name = "Stream Error Retry Processor"

    def __init__(
        self,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        delay_ms: DelayMs | None = None,
        matchers: Sequence[StreamErrorRetryMatcher] = (),
    ) -> None:
        super().__init__()
        self.max_retries = max_retries
        self.delay_ms = delay_ms
        self.matchers: list[StreamErrorRetryMatcher] = [is_retryable_openai_responses_stream_error, *matchers]

    def is_retryable(self, error: Any) -> bool:
        """Walk the error and its cause chain: a matcher or `is_retryable` metadata decides."""
        seen: set[int] = set()
        pending = [error]
        while pending:
            candidate = pending.pop(0)
            if candidate is None or id(candidate) in seen:
                continue
            seen.add(id(candidate))
            for matcher in self.matchers:
                try:
                    if matcher(candidate):
                        return True
                except Exception:
                    continue
            if _has_retryable_metadata(candidate):
                return True
            pending.extend(_links(candidate))
        return False

    async def _delay_seconds(self, args: ProcessAPIErrorArgs) -> float:
        delay = self.delay_ms
        if delay is None:
            return 0.0
        value = delay(args) if callable(delay) else delay
        if inspect.isawaitable(value):
            value = await value
        try:
            number = float(value)
        except (TypeError, ValueError):
            return 0.0
        return number / 1000 if math.isfinite(number) and number > 0 else 0.0

    async def process_api_error(self, args: ProcessAPIErrorArgs) -> ProcessAPIErrorResult | None:
        if args.retry_count >= self.max_retries or not self.is_retryable(args.error):
            return None
        seconds = await self._delay_seconds(args)
        if seconds:
            await asyncio.sleep(seconds)
        return ProcessAPIErrorResult(retry=True)
