"""Telling an abnormal provider response apart from a real (if empty) answer.

A provider call can "succeed" without an answer: a proxy or captive portal answers 200 with an
HTML page, a gateway answers 200 with a JSON error body, a connection closes cleanly in the
middle of an event stream. Read naively, each of those is an empty assistant turn that gets
stored as if the model had said nothing. Here each becomes an `APICallError` instead (retryable
where a retry can help), and the timeouts that bound a call are defined.
"""

from __future__ import annotations

import json
from typing import Any

from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.models._http_errors import body_is_transient, error_payload

DEFAULT_REQUEST_TIMEOUT = 60.0
"""Seconds to connect and receive a response's headers."""
DEFAULT_STREAM_IDLE_TIMEOUT = 120.0
"""Seconds a started response may go without sending a byte."""
_BODY_PREVIEW_BYTES = 64 * 1024


def check_timeouts(request: Any, idle: Any) -> tuple[float | None, float | None]:
    out: list[float | None] = []
    for name, value in (("request_timeout", request), ("stream_idle_timeout", idle)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf")
        ):
            raise ConfigurationError(f"{name} must be a positive number of seconds or None, got {value!r}")
        out.append(None if value is None else float(value))
    return out[0], out[1]


def sdk_timeout(client: Any, request: float | None, idle: float | None) -> Any:
    """The per-request timeout for an SDK client: connect/write/pool bounded by `request`, every
    read (so also the gaps between stream events) by `idle`. Built with the client's own
    `Timeout` class (whichever HTTP library its SDK uses; nothing is imported here)."""
    current: Any = getattr(client, "timeout", None)
    if hasattr(current, "connect") and hasattr(current, "read"):
        timeout_cls: Any = type(current)
        return timeout_cls(connect=request, read=idle, write=request, pool=request)
    return idle  # a client with a plain number: one bound for every phase


def no_response_error(url: str | None, timeout: float | None, request_body: Any) -> APICallError:
    return APICallError(
        f"the provider did not start a response within {timeout:g} s (request_timeout)",
        url=url,
        is_retryable=True,
        request_body_values=request_body,
    )


def truncated_stream_error(url: str | None, request_body: Any, what: str) -> APICallError:
    """A stream that ended cleanly but before its finish event: the answer is incomplete."""
    return APICallError(
        f"the provider's event stream ended before {what}; the response is incomplete",
        url=url,
        is_retryable=True,
        request_body_values=request_body,
    )


def check_json_answer(data: Any, *, url: str | None, request_body: Any) -> None:
    """Raise `APICallError` unless a non-streamed answer is a JSON object without an error."""
    if not isinstance(data, dict):
        text = data if isinstance(data, str) else repr(data)
        raise APICallError(
            "the provider's answer is not a JSON object",
            url=url,
            status_code=200,
            response_body=text[:_BODY_PREVIEW_BYTES],
            is_retryable=True,
            request_body_values=request_body,
        )
    error = data.get("error")
    if isinstance(error, dict) and error.get("message"):
        raise APICallError(
            str(error["message"]),
            url=url,
            status_code=200,
            response_body=json.dumps(data)[:_BODY_PREVIEW_BYTES],
            is_retryable=body_is_transient(data),
            request_body_values=request_body,
            data=data,
        )


async def _preview(response: Any) -> str:
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= _BODY_PREVIEW_BYTES:
                break
    except Exception:
        pass
    finally:
        try:
            await response.aclose()
        except Exception:
            pass
    return b"".join(chunks)[:_BODY_PREVIEW_BYTES].decode("utf-8", "replace")


async def check_event_stream(events: Any, *, url: str | None, request_body: Any) -> None:
    """Raise `APICallError` unless the SDK stream `events` reads an event stream."""
    response = getattr(events, "response", None)
    headers = getattr(response, "headers", None)
    if response is None or headers is None:
        return
    content_type = str(headers.get("content-type") or "").lower()
    if content_type.startswith("text/event-stream"):
        return
    text = await _preview(response)
    status = getattr(response, "status_code", None)
    body: Any = None
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    payload = error_payload(body)
    if payload is not None:
        found = payload.get("message")
        message = found if isinstance(found, str) and found else "the provider returned an error body"
        retryable = body_is_transient(body)
    else:
        kind = content_type.split(";")[0] or "no content type"
        message = f"the provider answered {status} with {kind} instead of an event stream"
        retryable = True  # proxies and gateways: usually an interruption, not a bad request
    headers_dict = {str(k).lower(): str(v) for k, v in headers.items()}
    raise APICallError(
        message,
        url=url,
        status_code=status if isinstance(status, int) else None,
        response_body=text,
        is_retryable=retryable,
        request_body_values=request_body,
        response_headers=headers_dict,
        data=body,
    )
