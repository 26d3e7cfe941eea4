"""`/docs` is Swagger UI 5 served from the `fastapi-offline` package: the page names only this
server's own files, they are served, and in Chromium it draws the API with no request leaving
the machine and no Content-Security-Policy violation. `/favicon.ico` is served too."""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.server.live import serve_in_thread

from sluicegate import Agent, Sluicegate
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing import MockModel

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _app(**settings: Any) -> Any:
    return create_app(Sluicegate(agents=[Agent("support", model=MockModel())]), ServerSettings(**settings))


def test_the_docs_page_names_only_local_assets_and_they_are_served() -> None:
    with TestClient(_app(api_token="secret")) as client:
        page = client.get("/docs")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "<script>" not in page.text  # no inline script: the policy allows this origin only
        assert "script-src 'self'" in page.headers["content-security-policy"]
        urls = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert {
            "/docs/static/swagger-ui-bundle.js",
            "/docs/static/swagger-ui.css",
            "/docs/static/init.js",
        } <= set(urls)
        for url in urls:
            assert url.startswith("/") and not url.startswith("//"), url
            asset = client.get(url)
            assert asset.status_code == 200, url
            assert len(asset.content) > 100 or url.endswith("init.js"), url
        assert "/openapi.json" in client.get("/docs/static/init.js").text
        assert client.get("/openapi.json").status_code == 200  # unprotected, like /docs
        assert client.get("/redoc").status_code == 404  # FastAPI's CDN page stays off


def test_the_favicon_is_served_on_every_app() -> None:
    with TestClient(_app()) as client:
        icon = client.get("/favicon.ico")
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
        assert icon.text.startswith("<svg")
    with TestClient(_app(studio=True)) as client:
        assert client.get("/favicon.ico").status_code == 200


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium is not installed")
@pytest.mark.timeout(120)
def test_swagger_ui_draws_the_api_offline_in_chromium() -> None:
    from playwright.sync_api import sync_playwright

    with serve_in_thread(_app()) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        try:
            page = browser.new_page()
            page.set_default_timeout(20_000)
            requested: list[str] = []
            problems: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
            page.goto(url + "/docs")
            page.wait_for_selector(".opblock-summary-path")
            paths = page.locator(".opblock-summary-path").all_inner_texts()
            assert any("/api/agents/{agentId}/generate" in p.replace("\u200b", "") for p in paths), paths
            assert requested and all(r.startswith(url) or r.startswith("data:") for r in requested), requested
            assert not problems, problems
        finally:
            browser.close()
