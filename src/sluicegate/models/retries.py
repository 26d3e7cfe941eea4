"""Retrying a model call that failed before its stream started (the AI SDK's `maxRetries`).

A 429, a 5xx, a connection reset or a timeout while opening the stream is retried up to
`max_retries` times (2 by default, like the AI SDK) before the error reaches the error
processors. The wait grows exponentially (2 s, 4 s, ... with jitter so that many clients that
failed together do not retry together) unless the provider said how long to wait
(`Retry-After-Ms` / `Retry-After`), which is honoured up to `max_retry_after_ms`. Nothing has
been shown to the caller yet, so the retry is invisible to them. Errors inside a stream that
already started are not retried here: the caller may have seen part of the answer
(see `StreamErrorRetryProcessor`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any

from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.models.base import CallOptions, StreamResult, model_label
from sluicegate.models.retry_after import DEFAULT_MAX_RETRY_AFTER_MS, retry_after_ms

log = logging.getLogger("sluicegate.models")

DEFAULT_MAX_RETRIES = 2
INITIAL_DELAY_MS = 2000.0
BACKOFF_FACTOR = 2.0


def check_max_retries(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"max_retries must be a non-negative integer, got {value!r}")
    return value


def backoff_delay_ms(attempt: int, *, rng: Callable[[], float] = random.random) -> float:
    """The wait before retry number `attempt + 1`: exponential, with half of it jittered."""
    base = INITIAL_DELAY_MS * BACKOFF_FACTOR**attempt
    return base / 2 + rng() * base / 2


def retry_delay_ms(
    error: BaseException, attempt: int, *, max_retry_after_ms: float = DEFAULT_MAX_RETRY_AFTER_MS
) -> float:
    """The provider's requested delay (capped) when it gave one, else the backoff."""
    requested = retry_after_ms(error)
    if requested is not None:
        return min(requested, max_retry_after_ms)
    return backoff_delay_ms(attempt)


def is_retryable(error: BaseException) -> bool:
    return isinstance(error, APICallError) and error.is_retryable


async def open_stream(model: Any, options: CallOptions, max_retries: int) -> StreamResult:
    """`model.do_stream(options)`, retried while it fails with a retryable `APICallError`."""
    attempt = 0
    while True:
        try:
            result: StreamResult = await model.do_stream(options)
            return result
        except APICallError as error:
            if not error.is_retryable or attempt >= max_retries:
                raise
            delay = retry_delay_ms(error, attempt)
            attempt += 1
            log.info(
                "%s failed (%s); retry %d of %d in %.2f s",
                model_label(model),
                error.public_message,  # the provider's own text is not for logs (docs/security.md)
                attempt,
                max_retries,
                delay / 1000,
            )
            await asyncio.sleep(delay / 1000)
