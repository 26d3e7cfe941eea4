"""`StreamErrorRetryProcessor`: retry transient provider errors, including ones that arrive
after the stream started.

An error is retryable when, anywhere along its cause chain (`cause` / `__cause__`, and the raw
stream event an `APICallError` carries in `data`), a matcher accepts it or provider metadata
says `is_retryable`. Matchers run first (the first that accepts decides, and its own
`max_retries` / `delay_ms` apply); `is_retryable_openai_responses_stream_error` is always one of
them. With `retry_unknown_errors`, errors nothing recognises are retried too, except known
authorization failures. The wait is the larger of the configured delay and the provider's
`Retry-After` (capped by `max_retry_after_ms`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sluicegate.errors import ConfigurationError
from sluicegate.models.retry_after import DEFAULT_MAX_RETRY_AFTER_MS, clamp_delay_ms, retry_after_ms
from sluicegate.processors.args import ProcessAPIErrorArgs, ProcessAPIErrorResult
from sluicegate.processors.base import Processor

StreamErrorRetryMatcher = Callable[[Any], bool]
DelayMs = float | Callable[[ProcessAPIErrorArgs], "float | Awaitable[float]"]

OnRetry = Callable[[ProcessAPIErrorArgs, float], "Awaitable[None] | None"]

DEFAULT_MAX_RETRIES = 1
TERMINAL_AUTHORIZATION_ERROR_CODES: frozenset[str] = frozenset(
    ("access_denied", "authentication_error", "forbidden", "invalid_api_key", "permission_denied")
)
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


def is_bad_request_error(error: Any) -> bool:
    """Matcher for HTTP 400s, which some providers return transiently (use with `max_retries=1`)."""
    status = error.get("statusCode") if isinstance(error, dict) else getattr(error, "status_code", None)
    return status == 400


def is_terminal_authorization_error(error: Any) -> bool:
    """A 401/403 or an authorization error code anywhere in the error (never worth a retry)."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        candidate = pending.pop()
        if candidate is None or id(candidate) in seen or isinstance(candidate, (str, int, float, bool)):
            continue
        seen.add(id(candidate))
        if isinstance(candidate, dict):
            status = candidate.get("statusCode", candidate.get("status"))
            code = candidate.get("code") or candidate.get("type")
            nested = [candidate.get("error"), candidate.get("data"), candidate.get("cause")]
            body = candidate.get("responseBody")
        else:
            status = getattr(candidate, "status_code", None)
            code = getattr(candidate, "code", None)
            nested = [getattr(candidate, "data", None), getattr(candidate, "cause", None)]
            if isinstance(candidate, BaseException):
                nested.append(candidate.__cause__)
            body = getattr(candidate, "response_body", None)
        if status in (401, 403):
            return True
        if isinstance(code, str) and code.strip().lower() in TERMINAL_AUTHORIZATION_ERROR_CODES:
            return True
        if isinstance(body, str) and body:
            try:
                nested.append(json.loads(body))
            except ValueError:
                pass
        pending.extend(nested)
    return False


@dataclass(frozen=True)
class RetryMatcher:
    """A matcher with its own policy: when it is the first to accept an error, its `max_retries`
    and `delay_ms` (when set) replace the processor's, and `on_retry(args, delay_ms)` runs."""

    match: StreamErrorRetryMatcher
    max_retries: int | None = None
    delay_ms: DelayMs | None = None
    on_retry: OnRetry | None = None


_MATCHER_KEYS = {
    "match": "match",
    "max_retries": "max_retries",
    "maxRetries": "max_retries",
    "delay_ms": "delay_ms",
    "delayMs": "delay_ms",
    "on_retry": "on_retry",
    "onRetry": "on_retry",
}


def _check_retries(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(
            f"StreamErrorRetryProcessor: {name} must be a non-negative integer, got {value!r}"
        )
    return value


def _check_delay(name: str, value: Any) -> DelayMs | None:
    if value is None or callable(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(
            f"StreamErrorRetryProcessor: {name} must be milliseconds or a callable of the args, got {value!r}"
        )
    return float(value)


def _matcher(entry: Any, index: int) -> RetryMatcher:
    """A matcher entry (a predicate, a `RetryMatcher`, or Mastra's `{match, maxRetries, delayMs,
    onRetry}` dict) validated: an entry that could never match is a configuration error."""
    if isinstance(entry, RetryMatcher):
        entry = {
            "match": entry.match,
            "max_retries": entry.max_retries,
            "delay_ms": entry.delay_ms,
            "on_retry": entry.on_retry,
        }
    elif callable(entry):
        return RetryMatcher(entry)
    if not isinstance(entry, Mapping):
        raise ConfigurationError(
            f"StreamErrorRetryProcessor: matchers[{index}] must be a callable or a dict with 'match', "
            f"got {type(entry).__name__}"
        )
    unknown = sorted(str(k) for k in entry if k not in _MATCHER_KEYS)
    if unknown:
        raise ConfigurationError(
            f"StreamErrorRetryProcessor: matchers[{index}] has unknown key(s) {unknown}; "
            f"known: {sorted(_MATCHER_KEYS)}"
        )
    fields = {_MATCHER_KEYS[k]: v for k, v in entry.items()}
    match = fields.get("match")
    if not callable(match):
        raise ConfigurationError(f"StreamErrorRetryProcessor: matchers[{index}]['match'] must be callable")
    max_retries = fields.get("max_retries")
    if max_retries is not None:
        _check_retries(f"matchers[{index}] max_retries", max_retries)
    on_retry = fields.get("on_retry")
    if on_retry is not None and not callable(on_retry):
        raise ConfigurationError(f"StreamErrorRetryProcessor: matchers[{index}] on_retry must be callable")
    return RetryMatcher(
        match=match,
        max_retries=max_retries,
        delay_ms=_check_delay(f"matchers[{index}] delay_ms", fields.get("delay_ms")),
        on_retry=on_retry,
    )


_BUILTIN = RetryMatcher(is_retryable_openai_responses_stream_error)
_METADATA = RetryMatcher(_has_retryable_metadata)
_UNKNOWN = RetryMatcher(lambda error: True)


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
                      max_retry_after_ms=10_000,
                      matchers=[is_connection_reset,
                                {"match": lambda e: getattr(e, "status_code", None) == 400,
                                 "max_retries": 1}])])
    ```

    `delay_ms` (a number or a callable of the `process_api_error` args, sync or async) waits
    before the retry is signalled; negative or non-finite delays count as 0. A provider's
    `Retry-After-Ms` / `Retry-After` makes the wait longer, up to `max_retry_after_ms` (30 s by
    default; it does not cap `delay_ms`). `retry_unknown_errors=True` also retries errors no
    matcher or metadata recognises, except 401/403 and authorization error codes. Messages are
    never changed. The wait is bounded by the processor's own options, so the hook is not
    subject to `processor_timeout`.
    """

    id = "stream-error-retry-processor"
    name = "Stream Error Retry Processor"
    timeout: float | None = None
    """Not bounded by `processor_timeout`: the configured delays bound the hook."""

    def __init__(
        self,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        delay_ms: DelayMs | None = None,
        matchers: Sequence[StreamErrorRetryMatcher | RetryMatcher | Mapping[str, Any]] = (),
        retry_unknown_errors: bool = False,
        max_retry_after_ms: float = DEFAULT_MAX_RETRY_AFTER_MS,
    ) -> None:
        super().__init__()
        self.max_retries = _check_retries("max_retries", max_retries)
        self.delay_ms = _check_delay("delay_ms", delay_ms)
        if isinstance(matchers, (str, bytes, Mapping)) or not isinstance(matchers, Sequence):
            raise ConfigurationError("StreamErrorRetryProcessor: matchers must be a list")
        self.matcher_entries: list[RetryMatcher] = [
            _BUILTIN,
            *(_matcher(m, i) for i, m in enumerate(matchers)),
        ]
        self.matchers: list[StreamErrorRetryMatcher] = [m.match for m in self.matcher_entries]
        if not isinstance(retry_unknown_errors, bool):
            raise ConfigurationError(
                "StreamErrorRetryProcessor: retry_unknown_errors must be a bool, "
                f"got {retry_unknown_errors!r}"
            )
        self.retry_unknown_errors = retry_unknown_errors
        if isinstance(max_retry_after_ms, bool) or not isinstance(max_retry_after_ms, (int, float)):
            raise ConfigurationError(
                "StreamErrorRetryProcessor: max_retry_after_ms must be milliseconds, "
                f"got {max_retry_after_ms!r}"
            )
        self.max_retry_after_ms = clamp_delay_ms(max_retry_after_ms)

    def matching_policy(self, error: Any) -> RetryMatcher | None:
        """Walk the error and its cause chain: the first matcher that accepts (or retryable
        metadata) gives the policy; None when nothing recognises the error."""
        seen: set[int] = set()
        pending = [error]
        while pending:
            candidate = pending.pop(0)
            if candidate is None or id(candidate) in seen:
                continue
            seen.add(id(candidate))
            for entry in self.matcher_entries:
                try:
                    if entry.match(candidate):
                        return entry
                except Exception:
                    continue
            if _has_retryable_metadata(candidate):
                return _METADATA
            pending.extend(_links(candidate))
        return None

    def is_retryable(self, error: Any) -> bool:
        """Whether this processor would retry `error` (retry count aside)."""
        return self._policy(error) is not None

    def _policy(self, error: Any) -> RetryMatcher | None:
        policy = self.matching_policy(error)
        if policy is None and self.retry_unknown_errors and not is_terminal_authorization_error(error):
            return _UNKNOWN
        return policy

    async def _delay_ms(self, delay: DelayMs | None, args: ProcessAPIErrorArgs) -> float:
        if delay is None:
            return 0.0
        value = delay(args) if callable(delay) else delay
        if inspect.isawaitable(value):
            value = await value
        return clamp_delay_ms(value)

    async def process_api_error(self, args: ProcessAPIErrorArgs) -> ProcessAPIErrorResult | None:
        policy = self._policy(args.error)
        if policy is None:
            return None
        limit = policy.max_retries if policy.max_retries is not None else self.max_retries
        if args.retry_count >= limit:
            return None
        configured = await self._delay_ms(
            policy.delay_ms if policy.delay_ms is not None else self.delay_ms, args
        )
        requested = retry_after_ms(args.error)
        provider = min(requested, self.max_retry_after_ms) if requested is not None else 0.0
        delay = max(configured, provider)
        if policy.on_retry is not None:
            result = policy.on_retry(args, delay)
            if inspect.isawaitable(result):
                await result
        if delay:
            await _wait(delay / 1000, getattr(args, "abort_signal", None))
        return ProcessAPIErrorResult(retry=True)


async def _wait(seconds: float, abort_signal: Any) -> None:
    """Sleep, ending early when the run's abort signal (an `asyncio.Event`) is set."""
    if isinstance(abort_signal, asyncio.Event):
        try:
            await asyncio.wait_for(abort_signal.wait(), seconds)
        except TimeoutError:
            pass
        return
    await asyncio.sleep(seconds)
