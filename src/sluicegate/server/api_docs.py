"""`/docs`: Swagger UI for `/openapi.json`, from the static files of the `fastapi-offline`
package (installed with the `server` extra), so it works offline and runs no third party's code
from a CDN next to the API token. And `/favicon.ico`, which every browser asks for.

Only the package's Swagger UI 5 files are used. `swagger-ui-bundle` ships Swagger UI 4.15,
which refuses FastAPI's OpenAPI 3.1 schema ("does not specify a valid version field").

The page has no inline script (Swagger UI is started by `/docs/static/init.js`), so its
Content-Security-Policy allows scripts from this origin only.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, Response

from sluicegate.errors import MissingExtraError

FAVICON = Path(__file__).parent / "studio" / "static" / "favicon.svg"
ASSETS = ("swagger-ui.css", "swagger-ui-bundle.js")
"""The files of the bundle the page loads (nothing else of it is served)."""
DOCS_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
"""Swagger UI sets style attributes and draws icons from data: URLs; it calls only this origin."""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} - API</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<link rel="stylesheet" href="/docs/static/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script src="/docs/static/init.js"></script>
</body>
</html>
"""
INIT = """window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
});
"""


def bundle_path() -> Path:
    """The directory of Swagger UI's files in the installed `fastapi-offline`."""
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError("fastapi-offline", extra="server", feature="the /docs page")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def mount_api_docs(app: FastAPI, *, title: str) -> None:
    """`/docs`, its assets under `/docs/static/`, and `/favicon.ico`."""
    bundle = bundle_path()
    page = PAGE.format(title=title)
    headers = {"content-security-policy": DOCS_POLICY}

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(page, headers=headers)

    @app.get("/docs/static/init.js", include_in_schema=False)
    async def init() -> Response:
        return Response(INIT, media_type="text/javascript")

    for name in ASSETS:
        path = bundle / name
        media = "text/css" if name.endswith(".css") else "text/javascript"

        async def asset(path: Path = path, media: str = media) -> FileResponse:
            return FileResponse(path, media_type=media)

        app.add_api_route(f"/docs/static/{name}", asset, methods=["GET"], include_in_schema=False)

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        return FileResponse(FAVICON, media_type="image/svg+xml")


BEARER = {
    "type": "http",
    "scheme": "bearer",
    "description": "`Authorization: Bearer <token>`: SLUICEGATE_API_TOKEN, or what the app's "
    "identity hook reads.",
}


def declare_bearer_auth(app: FastAPI, *, required: bool) -> None:
    """Declare the bearer scheme in `/openapi.json` (Swagger UI's Authorize button), and as
    every operation's requirement when the server wants a token (`required`)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()  # FastAPI's, made once and cached on the app
        schemes = schema.setdefault("components", {}).setdefault("securitySchemes", {})
        if "bearerAuth" not in schemes:
            schemes["bearerAuth"] = BEARER
            if required:
                schema["security"] = [{"bearerAuth": []}]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
