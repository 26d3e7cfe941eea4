"""`create_app`: the FastAPI application that serves a `Sluicegate` registry.

```python
from sluicegate.server import ServerSettings, create_app
app = create_app(registry, ServerSettings(api_token="secret", cors_origins=("https://app.example",)))
```

Middleware, outermost first: the security headers (outside even the 500 handler, so every
answer has them; see `sluicegate.server.headers`), CORS, bearer auth (when a token is set), the
identity gate (when the registry has a `resolve_identity` hook; see
`sluicegate.server.identity`), the body-size limit.
The app holds the registry, settings and (with the studio) recent trace spans; conversations
live in storage.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp

from sluicegate import __version__
from sluicegate.registry import Sluicegate
from sluicegate.server import agents, hitl_routes, memory_routes, processor_routes, tool_routes
from sluicegate.server.auth import BearerAuth, BodyLimit
from sluicegate.server.errors import install_error_handlers
from sluicegate.server.headers import SecurityHeaders
from sluicegate.server.identity import IdentityGate
from sluicegate.server.settings import ServerSettings
from sluicegate.server.traces import install_recent_spans


class _App(FastAPI):
    """FastAPI with `SecurityHeaders` around its whole stack: middleware added with
    `add_middleware` sits inside Starlette's error handler, whose 500s would go out bare."""

    def build_middleware_stack(self) -> ASGIApp:
        return SecurityHeaders(super().build_middleware_stack())


def create_app(registry: Sluicegate, settings: ServerSettings | None = None) -> FastAPI:
    """An ASGI app serving `registry` under `/api` (Mastra's routes), `/openapi.json`,
    and the studio at `/studio` when `settings.studio` is set.

    FastAPI's `/docs` and `/redoc` pages are turned off: they load their scripts from a CDN,
    which fails offline and puts a third party's code next to the API token. The schema at
    `/openapi.json` opens in any OpenAPI viewer."""
    settings = settings or ServerSettings.from_env()
    middleware: list[Middleware] = []
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
                allow_headers=["authorization", "content-type", "x-mastra-client-type"],
                expose_headers=[agents.TRACE_HEADER],
            )
        )
    if settings.api_token:
        middleware.append(Middleware(BearerAuth, token=settings.api_token))
    if registry.resolve_identity is not None:
        middleware.append(Middleware(IdentityGate, resolve=registry.resolve_identity))
    middleware.append(Middleware(BodyLimit, max_bytes=settings.max_body_bytes))
    app = _App(
        title="sluicegate",
        version=__version__,
        description="Mastra-compatible agent API served by sluicegate.",
        middleware=middleware,
        docs_url=None,
        redoc_url=None,
    )
    app.state.registry = registry
    app.state.settings = settings
    app.state.app_key = uuid.uuid4().hex
    # Only the studio reads spans: without it the server turns no tracing on by itself (an
    # OpenTelemetry provider the application configured still gets the run spans).
    app.state.spans = (
        install_recent_spans(settings.trace_capacity, app_key=app.state.app_key) if settings.studio else None
    )
    install_error_handlers(app)
    if os.environ.get("SLUICEGATE_TEMPORAL"):  # `serve --temporal`: runs are workflows (first match wins)
        from sluicegate.server.durable_routes import install

        install(app)
    for module in (agents, hitl_routes, memory_routes, processor_routes, tool_routes):
        app.include_router(module.router)
    app.include_router(tool_routes.agent_router)

    @app.get("/", include_in_schema=False)
    async def root() -> Any:
        if settings.studio:
            return RedirectResponse("/studio")
        return JSONResponse(
            {"name": "sluicegate", "version": __version__, "api": "/api", "openapi": "/openapi.json"}
        )

    @app.get("/api", include_in_schema=False)
    async def api_root() -> dict[str, str]:
        return {"name": "sluicegate", "version": __version__}

    if settings.studio:
        from sluicegate.server.studio import mount_studio

        mount_studio(app)
    return app
