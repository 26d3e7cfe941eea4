"""SDK exceptions -> `APICallError`, shared by every HTTP provider adapter.

The `openai` and `anthropic` SDKs raise their own exception families (status errors with a
response, connection and timeout errors, and errors decoded from a stream's `error` event).
Processors only see `sluicegate.errors.APICallError`, so each adapter funnels what its SDK raises
through `to_api_call_error`; errors inside an already-started stream become an `error` stream part
(`error_part`) carrying the same fields.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from sluicegate.errors import APICallError, retryable_status
from sluicegate.models.base import StreamPart

# Error `type`/`code` values providers put in a body (often inside a 200 stream) for transient
# failures: Anthropic's `overloaded_error` / `api_error` / `rate_limit_error`, OpenAI's
# `server_error` / `rate_limit_exceeded` and friends.
_TRANSIENT_ERROR_CODES = (
    "overloaded",
    "api_error",
    "rate_limit",
    "server_error",
    "internal_error",
    "timeout",
    "temporarily_unavailable",
    "service_unavailable",
)


def _is_connection_error(exc: BaseException) -> bool:
    # Only SDKs already imported can have raised `exc` (and an optional one may not be installed).
    sdk_errors = tuple(
        module.APIConnectionError for name in ("openai", "anthropic") if (module := sys.modules.get(name))
    )
    if isinstance(exc, (*sdk_errors, ConnectionError, TimeoutError)):
        return True
    # httpx / httpx2 transport errors (ReadError, RemoteProtocolError, ...) surface unwrapped when
    # a connection drops while a stream is being read.
    return any(cls.__name__ in ("TransportError", "StreamError") for cls in type(exc).__mro__)


def error_payload(body: Any) -> dict[str, Any] | None:
    """The `{"type"/"code", "message"}` object inside a provider error body, if any."""
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):
            return inner
        response = body.get("response")  # OpenAI Responses `response.failed`
        if isinstance(response, dict) and isinstance(response.get("error"), dict):
            return response["error"]  # type: ignore[no-any-return]
        if "message" in body or "code" in body:
            return body
    return None


def body_is_transient(body: Any) -> bool:
    payload = error_payload(body)
    if payload is None:
        return False
    code = f"{payload.get('type') or ''} {payload.get('code') or ''}".lower()
    return any(marker in code for marker in _TRANSIENT_ERROR_CODES)


def _body_text(body: Any) -> str | None:
    if body is None:
        return None
    if isinstance(body, str):
        return body
    try:
        return json.dumps(body)
    except (TypeError, ValueError):
        return str(body)


def to_api_call_error(
    exc: BaseException, *, url: str | None = None, request_body: Any = None
) -> APICallError:
    """An `APICallError` with status, body, url and retryability read from an SDK exception."""
    if isinstance(exc, APICallError):
        return exc
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    body = getattr(exc, "body", None)
    response = getattr(exc, "response", None)
    response_body: str | None = None
    headers: dict[str, str] | None = None
    if response is not None:
        try:
            response_body = response.text or None
        except Exception:  # a streamed response that was never read
            response_body = None
        try:
            headers = {k.lower(): v for k, v in response.headers.items()}
        except Exception:
            headers = None
    if response_body is None:
        response_body = _body_text(body)
    if url is None:
        request = getattr(exc, "request", None) or getattr(response, "request", None)
        if request is not None:
            try:
                url = str(request.url)
            except Exception:
                url = None
    payload = error_payload(body)
    message = payload.get("message") if payload else None
    if not isinstance(message, str) or not message:
        message = str(exc) or type(exc).__name__
    # A status of 200 means the error arrived inside a stream: judge it by the body instead.
    streamed = status is None or status < 400
    retryable = (
        retryable_status(status) or _is_connection_error(exc) or (streamed and body_is_transient(body))
    )
    return APICallError(
        message,
        url=url,
        status_code=status,
        response_body=response_body,
        is_retryable=retryable,
        request_body_values=request_body,
        response_headers=headers,
        cause=exc,
        data=body,
    )


def stream_error(
    payload: Any,
    *,
    url: str | None,
    request_body: Any = None,
    status_code: int | None = None,
    message: str | None = None,
) -> APICallError:
    """An `APICallError` for an error event a provider sent inside a stream (`payload` = the event)."""
    inner = error_payload(payload)
    if message is None:
        found = inner.get("message") if inner else None
        message = found if isinstance(found, str) and found else "the provider reported an error mid-stream"
    return APICallError(
        message,
        url=url,
        status_code=status_code,
        response_body=_body_text(payload),
        is_retryable=retryable_status(status_code) or body_is_transient(payload),
        request_body_values=request_body,
        data=payload,
    )


async def close_quietly(stream: Any) -> None:
    """Release an SDK stream's connection when a caller stops reading early."""
    close = getattr(stream, "close", None)
    if close is not None:
        try:
            await close()
        except Exception:
            pass


def error_part(exc: BaseException, *, url: str | None = None, request_body: Any = None) -> StreamPart:
    """The V2 `error` stream part for a failure after the stream started."""
    return {"type": "error", "error": to_api_call_error(exc, url=url, request_body=request_body)}
