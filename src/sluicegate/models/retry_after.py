"""Reading a provider's requested retry delay (`Retry-After-Ms` / `Retry-After`) from an error.

Used by the agent's own pre-stream retries and by `StreamErrorRetryProcessor`. The delay is
always capped by the caller: a large (or hostile) header must not wedge a run.
"""

from __future__ import annotations

import re
import time
from typing import Any

DEFAULT_MAX_RETRY_AFTER_MS = 30_000.0
"""The longest provider-requested delay honoured unless configured otherwise (Mastra's default)."""

_DIGITS = re.compile(r"\d+")
_NUMBER_LIKE = re.compile(r"[+-]?\d*\.?\d+(?:e[+-]?\d+)?", re.IGNORECASE)


def _headers(candidate: Any) -> dict[str, Any] | None:
    headers = (
        candidate.get("responseHeaders") or candidate.get("response_headers")
        if isinstance(candidate, dict)
        else getattr(candidate, "response_headers", None)
    )
    return headers if isinstance(headers, dict) else None


def _header(headers: dict[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name and isinstance(value, str):
            return value
    return None


def parse_retry_after_ms(value: str) -> float | None:
    """`Retry-After-Ms`: a whole number of milliseconds."""
    value = value.strip()
    return float(value) if _DIGITS.fullmatch(value) else None


def parse_retry_after(value: str, now: float | None = None) -> float | None:
    """`Retry-After`: delay-seconds or an HTTP-date, as milliseconds from `now` (epoch seconds)."""
    value = value.strip()
    if _DIGITS.fullmatch(value):
        return float(value) * 1000
    if _NUMBER_LIKE.fullmatch(value):  # "-3", "1.5": malformed, not a date
        return None
    import email.utils  # only HTTP-date values need it (and it is slow to import)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    delay = when.timestamp() - (time.time() if now is None else now)
    return delay * 1000 if delay > 0 else None


def _cause(candidate: Any) -> Any:
    if isinstance(candidate, BaseException):
        return getattr(candidate, "cause", None) or candidate.__cause__
    if isinstance(candidate, dict):
        return candidate.get("cause")
    return None


def retry_after_ms(error: Any, now: float | None = None) -> float | None:
    """The delay the provider asked for, from `error` or any error in its cause chain."""
    seen: set[int] = set()
    candidate = error
    while candidate is not None and id(candidate) not in seen:
        seen.add(id(candidate))
        headers = _headers(candidate)
        if headers:
            ms_header = _header(headers, "retry-after-ms")
            if ms_header is not None:
                ms = parse_retry_after_ms(ms_header)
                if ms is not None:
                    return ms
            header = _header(headers, "retry-after")
            if header is not None:
                ms = parse_retry_after(header, now)
                if ms is not None:
                    return ms
        candidate = _cause(candidate)
    return None


def clamp_delay_ms(value: Any) -> float:
    """A delay as finite, non-negative milliseconds (anything else counts as 0)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number > 0 and number != float("inf") else 0.0
