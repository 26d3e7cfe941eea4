"""Security headers (finding 10b): every answer is `nosniff`, unframeable, sends no referrer and
carries a Content-Security-Policy; the studio page carries its own strict one."""

from __future__ import annotations

import re

import pytest
from fastapi.responses import PlainTextResponse
from fastapi.testclient import TestClient
from httpx import Response

from sluicegate import Agent, Sluicegate
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.headers import API_POLICY, STUDIO_POLICY
from sluicegate.testing.echo_model import EchoModel

TOKEN = {"Authorization": "Bearer s3cret"}


@pytest.fixture
def client() -> TestClient:
    registry = Sluicegate(agents=[Agent(name="echo", model=EchoModel(deltas=2))])
    app = create_app(registry, ServerSettings(api_token="s3cret", studio=True, max_body_bytes=1000))

    @app.get("/boom", include_in_schema=False)
    async def boom() -> None:
        raise RuntimeError("a bug")

    return TestClient(app, raise_server_exceptions=False)


def assert_guarded(response: Response, policy: str = API_POLICY) -> None:
    assert response.headers["x-content-type-options"] == "nosniff", response.request.url
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["content-security-policy"] == policy
    assert response.headers.get_list("content-security-policy") == [policy]  # one policy, not two


def test_every_answer_carries_the_headers(client: TestClient) -> None:
    answers = {
        "liveness": client.get("/api"),
        "root": client.get("/", follow_redirects=False),
        "schema": client.get("/openapi.json"),
        "agents": client.get("/api/agents", headers=TOKEN),
        "stream": client.post("/api/agents/echo/stream", json={"messages": "hi"}, headers=TOKEN),
        "no token": client.get("/api/agents"),
        "unknown route": client.get("/nowhere"),
        "malformed": client.post(
            "/api/agents/echo/generate", content=b"{", headers={**TOKEN, "content-type": "application/json"}
        ),
        "too large": client.post("/api/agents/echo/generate", content=b"x" * 2000, headers=TOKEN),
        "crash": client.get("/boom"),
        "studio script": client.get("/studio/static/core.js"),
    }
    expected = {
        "liveness": 200,
        "root": 307,
        "schema": 200,
        "agents": 200,
        "stream": 200,
        "no token": 401,
        "unknown route": 404,
        "malformed": 400,
        "too large": 413,
        "crash": 500,
        "studio script": 200,
    }
    assert {name: r.status_code for name, r in answers.items()} == expected
    for response in answers.values():
        assert_guarded(response)


def test_the_studio_page_has_its_own_strict_policy(client: TestClient) -> None:
    page = client.get("/studio")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert_guarded(page, STUDIO_POLICY)
    directives = dict(d.strip().split(" ", 1) for d in STUDIO_POLICY.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self'" and directives["frame-ancestors"] == "'none'"
    assert directives["require-trusted-types-for"] == "'script'"
    # The page's markup needs nothing the policy forbids: no inline script, style or handler.
    html = page.text
    assert "<script>" not in html and "<style" not in html and "style=" not in html
    assert not re.search(r"\son[a-z]+\s*=", html)  # no inline event handler
    assert '<script src="/studio/static/core.js"></script>' in html


def test_a_route_that_sets_its_own_header_keeps_it() -> None:
    app = create_app(Sluicegate(agents=[]), ServerSettings())

    @app.get("/framed")
    async def framed() -> PlainTextResponse:
        return PlainTextResponse("ok", headers={"X-Frame-Options": "SAMEORIGIN"})

    response = TestClient(app).get("/framed")
    assert response.headers.get_list("x-frame-options") == ["SAMEORIGIN"]
    assert response.headers["x-content-type-options"] == "nosniff"
