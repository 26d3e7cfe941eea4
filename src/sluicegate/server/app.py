"""`create_app`: the FastAPI application that serves a `Sluicegate` registry.

```python
from sluicegate.server import ServerSettings, create_app
app = create_app(registry, ServerSettings(api_token="secret", cors_origins=("https://app.example",)))
```

Middleware, outermost first: the security headers (outside even the 500 handler, so every
answer has them; see `sluicegate.server.headers`), the Host check (when `allowed_hosts` is set;
see `sluicegate.server.hosts`), CORS, bearer auth (when a token is set), the
identity gate (when the registry has a `resolve_identity` hook; see
`sluicegate.server.identity`), the body-size limit.
The app holds the registry, settings and (with the studio) recent trace spans; conversations
live in storage.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp

from sluicegate import __version__
from sluicegate.registry import Sluicegate
from sluicegate.server import (
    agents,
    eval_routes,
    hitl_routes,
    mcp_routes,
    memory_routes,
    processor_routes,
    tool_routes,
)
from sluicegate.server.api_docs import declare_bearer_auth, mount_api_docs
from sluicegate.server.auth import BearerAuth, BodyLimit
from sluicegate.server.errors import install_error_handlers
from sluicegate.server.headers import SecurityHeaders
from sluicegate.server.hosts import HostCheck
from sluicegate.server.identity import IdentityGate
from sluicegate.server.mastra import routers as mastra_routers
from sluicegate.server.protocols.a2a import routes as a2a_routes
from sluicegate.server.protocols.ag_ui import routes as ag_ui_routes
from sluicegate.server.protocols.ai_sdk import routes as ai_sdk_routes
from sluicegate.server.protocols.responses import routes as responses_routes
from sluicegate.server.settings import ServerSettings, cors_options, durable_runs
from sluicegate.server.traces import RecentSpans, install_recent_spans
from sluicegate.storage.span_store import SpanStore
from sluicegate.storage.sqlite import SQLiteStore
from sluicegate.tracing import state as tracing_state

log = logging.getLogger("sluicegate.server")

PROTECTED = ("/api", ai_sdk_routes.PREFIX)
"""The paths under the bearer token and the identity hook: the API, and the front ends'
protocols served outside it."""


def _recent_spans(registry: Sluicegate, settings: ServerSettings, app_key: str) -> RecentSpans | None:
    """Only the studio reads spans: without it the server turns no tracing on by itself (an
    OpenTelemetry provider the application configured still gets the run spans). They are kept
    in the registry's storage when it can keep them."""
    if not settings.studio:
        return None
    if settings.capture_content:
        tracing_state.STATE.capture_content = True
        tracing_state.STATE.capture_changes = True
    store: Any = registry.storage_for(None) if settings.persist_traces else None
    if settings.persist_traces and not isinstance(store, SpanStore) and settings.trace_db:
        Path(settings.trace_db).parent.mkdir(parents=True, exist_ok=True)
        store = SQLiteStore(settings.trace_db)
    return install_recent_spans(
        settings.trace_capacity,
        app_key=app_key,
        store=store if isinstance(store, SpanStore) else None,
        max_age=timedelta(seconds=settings.trace_max_age),
    )


class _App(FastAPI):
    """FastAPI with `SecurityHeaders` around its whole stack: middleware added with
    `add_middleware` sits inside Starlette's error handler, whose 500s would go out bare."""

    def build_middleware_stack(self) -> ASGIApp:
        return SecurityHeaders(super().build_middleware_stack())


def create_app(registry: Sluicegate, settings: ServerSettings | None = None) -> FastAPI:
    """An ASGI app serving `registry` under `/api` (Mastra's routes), `/openapi.json`, Swagger
    UI at `/docs`, and the studio at `/studio` when `settings.studio` is set.

    FastAPI's own `/docs` and `/redoc` pages are turned off: they load their scripts from a
    CDN, which fails offline and puts a third party's code next to the API token. `/docs` is
    served from the `swagger-ui-bundle` package instead (see `api_docs`)."""
    settings = settings or ServerSettings.from_env()
    middleware: list[Middleware] = []
    if settings.allowed_hosts:  # first: a rebound name gets nothing, not even a CORS preflight
        middleware.append(Middleware(HostCheck, allowed=settings.allowed_hosts))
    if settings.cors_origins or settings.cors_loopback:
        options = cors_options(settings.cors_origins, loopback=settings.cors_loopback)
        middleware.append(Middleware(CORSMiddleware, **options))
    if settings.api_token:
        middleware.append(Middleware(BearerAuth, token=settings.api_token, protected=PROTECTED))
    if registry.resolve_identity is not None:
        middleware.append(Middleware(IdentityGate, resolve=registry.resolve_identity, protected=PROTECTED))
    middleware.append(Middleware(BodyLimit, max_bytes=settings.max_body_bytes))
    spans = _recent_spans(registry, settings, app_key := uuid.uuid4().hex)
    mcp_endpoints = mcp_routes.MCPEndpoints(registry)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if spans is not None and spans.store is not None:
            try:  # the runs stored before (a reload, other instances), and the writer started
                await spans.sync()
            except Exception:
                log.exception("could not read the studio's stored runs; they will be read later")
        try:  # the agents' MCP tools (`tools=[mcp]`), listed before the first request
            await registry.load_tools()
            async with mcp_endpoints.run():  # the MCP servers' streamable HTTP sessions
                yield
        finally:
            await registry.close_tool_sources()  # the MCP servers those clients started
        if spans is not None:
            await spans.aclose()  # the spans not yet written
            if isinstance(spans.store, SQLiteStore) and spans.store is not registry.storage_for(None):
                await spans.store.close()  # the app's own trace file (`trace_db`)

    app = _App(
        title="sluicegate",
        lifespan=lifespan,
        version=__version__,
        description="Mastra-compatible agent API served by sluicegate.",
        middleware=middleware,
        docs_url=None,
        redoc_url=None,
    )
    app.state.registry = registry
    app.state.settings = settings
    app.state.app_key = app_key
    app.state.spans = spans
    install_error_handlers(app)
    mount_api_docs(app, title="sluicegate")
    declare_bearer_auth(app, required=bool(settings.api_token or registry.resolve_identity))
    for mastra_router in mastra_routers():  # before `/api/agents/{agentId}` can claim their paths
        app.include_router(mastra_router)
    if durable_runs():  # `serve --temporal`: runs are workflows (first match wins)
        from sluicegate.server.durable_routes import install

        install(app)
    for module in (agents, eval_routes, hitl_routes, memory_routes, processor_routes, tool_routes):
        app.include_router(module.router)
    app.include_router(tool_routes.agent_router)
    app.include_router(ai_sdk_routes.router)
    app.include_router(ag_ui_routes.router)
    app.include_router(responses_routes.router)  # the Responses API (`/api/v1/responses`)
    app.include_router(a2a_routes.router)  # A2A (`/api/a2a/{agentId}`, its agent card)
    mcp_routes.install(app, mcp_endpoints)

    @app.get("/", include_in_schema=False)
    async def root() -> Any:
        if settings.studio:
            return RedirectResponse("/studio")
        return JSONResponse(
            {
                "name": "sluicegate",
                "version": __version__,
                "api": "/api",
                "openapi": "/openapi.json",
                "docs": "/docs",
            }
        )

    @app.get("/api", include_in_schema=False)
    async def api_root() -> dict[str, str]:
        return {"name": "sluicegate", "version": __version__}

    if settings.studio:
        from sluicegate.server.studio import mount_studio

        mount_studio(app)
    return app
