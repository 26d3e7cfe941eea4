"""Error responses in Mastra's shape (`{"error": message}`), and the handlers that make sure
nothing a client sends turns into a 500."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from sluicegate.errors import AccessDeniedError, APICallError, SluicegateError
from sluicegate.server.plain_json import ERROR_TYPE as PLAIN_JSON_ERROR

log = logging.getLogger("sluicegate.server")


class ApiError(Exception):
    """An error answer: HTTP status, a message, optionally the request field at fault, and
    extra typed fields for the body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        field: str | None = None,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.extra = extra
        self.headers = headers


def provider_error(exc: APICallError, *, details: bool = False) -> ApiError:
    """502 for a provider that failed: `error` is the public summary, with `provider`,
    `statusCode`, `code`, `isRetryable` beside it; the provider's own text only with `details`
    (the agent's `provider_error_details`)."""
    public = exc.public_json(details=details)
    extra = {k: v for k, v in public.items() if k != "message"}
    return ApiError(502, f"model provider error: {public['message']}", extra=extra)


def bad_request(field: str, message: str) -> ApiError:
    return ApiError(400, f"{field}: {message}", field=field)


def not_found(kind: str, ident: str) -> ApiError:
    return ApiError(404, f"{kind} {ident!r} not found")


MAX_LISTED_AGENTS = 20


def unknown_agent(agent_id: str, known: list[str]) -> ApiError:
    """404 naming the agents there are (the first `MAX_LISTED_AGENTS`), as `GET /api/agents`
    lists them to the same caller."""
    shown = ", ".join(known[:MAX_LISTED_AGENTS]) + (", ..." if len(known) > MAX_LISTED_AGENTS else "")
    return ApiError(
        404,
        f"agent {agent_id!r} not found; agents: {shown or 'none'}",
        field="agentId",
        extra={"agents": known[:MAX_LISTED_AGENTS]},
    )


def thread_unavailable(field: str, thread_id: str) -> ApiError:
    """Creating (or running on) a thread id another resource owns: one answer on every route,
    which says the id is taken and nothing about whose it is (docs/security.md)."""
    return ApiError(409, f"{field}: thread id {thread_id!r} is not available; use another", field=field)


def error_body(message: str, field: str | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": message}
    if field is not None:
        body["field"] = field
    if extra:
        body.update(extra)
    return body


_TYPE_TAGS = frozenset(("str", "int", "float", "bool", "list", "dict", "none", "any"))


def _is_field(part: Any) -> bool:
    """Whether a validation-location part names a field (not a union member's type tag)."""
    if isinstance(part, int):
        return True
    text = str(part)
    return not ("[" in text or "(" in text or text in _TYPE_TAGS or text[:1].isupper() or text == "body")


def _location(loc: tuple[Any, ...] | list[Any]) -> str:
    if len(loc) >= 2 and loc[0] in ("query", "path", "header"):
        return str(loc[1])
    parts = [str(p) for p in loc if _is_field(p)] or ["body"]
    return ".".join(parts)


def describe_validation(exc: RequestValidationError) -> tuple[str, str]:
    """The field and a one-line message for the first validation problem."""
    errors = exc.errors()
    if not errors:
        return "body", "invalid request"
    first = errors[0]
    kind = first.get("type", "")
    if kind == "json_invalid":
        return "body", f"malformed JSON ({first.get('ctx', {}).get('error', 'parse error')})"
    context = first.get("ctx") or {}
    if kind == PLAIN_JSON_ERROR:  # the body check names the exact field itself
        return str(context["field"]), str(context["message"])
    where = _location(first.get("loc", ()))
    if where == "body" and kind in _NOT_AN_OBJECT:
        return "body", f"send a JSON object (content-type: application/json), got {_what(first.get('input'))}"
    return where, str(first.get("msg", "invalid value"))


_NOT_AN_OBJECT = frozenset(("model_attributes_type", "dict_type", "model_type"))
"""Pydantic's kinds for a body that is not an object ("Input should be a valid dictionary")."""


def _what(value: Any) -> str:
    """What a client sent instead of an object, in JSON's words (never the value itself)."""
    if isinstance(value, (bytes, bytearray)):
        return "a body that is not JSON"
    if isinstance(value, str):
        return "a JSON string"
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, (int, float)):
        return "a JSON number"
    if isinstance(value, list):
        return "a JSON array"
    return "null" if value is None else "something else"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(
            error_body(exc.message, exc.field, exc.extra), status_code=exc.status, headers=exc.headers
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        where, message = describe_validation(exc)
        return JSONResponse(error_body(f"{where}: {message}", where), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(error_body(str(exc.detail)), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(AccessDeniedError)
    async def _access_denied(_: Request, exc: AccessDeniedError) -> JSONResponse:
        return JSONResponse(error_body(str(exc)), status_code=403)

    @app.exception_handler(SluicegateError)
    async def _sluicegate(_: Request, exc: SluicegateError) -> JSONResponse:
        return JSONResponse(error_body(str(exc)), status_code=400)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body("internal error"), status_code=500)
