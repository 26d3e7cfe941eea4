"""Who may decide a run over HTTP: with an identity hook only the run's own resource (and
pinned thread); another resource's run answers exactly as an unknown run does (404, same
body), never 403. Without a hook, a `resourceId` the client names must be the run's owner.
And of concurrent approvals of one call, exactly one gets the run."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request

from sluicegate import Sluicegate
from sluicegate.server import Identity, ServerSettings, create_app

from .helpers import sse_events
from .test_hitl_routes import ASK, WIPE, suspend

ALICE = {"x-user": "alice"}
BOB = {"x-user": "bob"}


def users(request: Request) -> Identity | None:
    user = request.headers.get("x-user")
    return Identity(resource_id=user, thread_id=request.headers.get("x-thread")) if user else None


@pytest.fixture
def hooked(example: Any) -> Any:
    registry = Sluicegate(agents={"echo": example.echo}, storage=example.storage, resolve_identity=users)
    with TestClient(create_app(registry, ServerSettings())) as client:
        yield client


def _bobs_runs(client: TestClient) -> tuple[str, str]:
    wipe, _ = suspend_as(client, BOB, WIPE, "t-bob")
    ask, _ = suspend_as(client, BOB, ASK, "t-bob")
    return wipe, ask


def suspend_as(
    client: TestClient, headers: dict[str, str], text: str, thread: str
) -> tuple[str, dict[str, Any]]:
    answer = client.post(
        "/api/agents/echo/stream", json={"messages": text, "memory": {"thread": thread}}, headers=headers
    )
    events, done = sse_events(answer.text)
    assert done and events[-1]["type"] in ("tool-call-approval", "tool-call-suspended"), answer.text
    return events[-1]["runId"], events[-1]


def _decisions(wipe: str, ask: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("approve-tool-call", {"runId": wipe}),
        ("decline-tool-call", {"runId": wipe, "reason": "no"}),
        ("approve-tool-call-generate", {"runId": wipe}),
        ("decline-tool-call-generate", {"runId": wipe}),
        ("resume-stream", {"runId": ask, "resumeData": {"answer": "x"}}),
    ]


def test_another_resources_run_answers_like_an_unknown_one(hooked: TestClient, example: Any) -> None:
    wipe, ask = _bobs_runs(hooked)
    for route, body in _decisions(wipe, ask):
        theirs = hooked.post(f"/api/agents/echo/{route}", json=body, headers=ALICE)
        unknown = hooked.post(f"/api/agents/echo/{route}", json={**body, "runId": "r-unknown"}, headers=ALICE)
        assert theirs.status_code == unknown.status_code == 404, (route, theirs.text)
        assert theirs.json() == {
            **unknown.json(),
            "error": unknown.json()["error"].replace("r-unknown", body["runId"]),
        }
    observed = hooked.post("/api/agents/echo/observe", json={"runId": wipe}, headers=ALICE)
    unknown = hooked.post("/api/agents/echo/observe", json={"runId": "r-unknown"}, headers=ALICE)
    assert observed.status_code == unknown.status_code == 404
    assert observed.json()["error"].replace(wipe, "r-unknown") == unknown.json()["error"]
    assert hooked.get("/api/agents/echo/suspended-runs", headers=ALICE).json() == {"runs": [], "total": 0}
    assert example.wiped == []
    # bob's runs still wait, and bob decides them
    assert hooked.get("/api/agents/echo/suspended-runs", headers=BOB).json()["total"] == 2
    done = hooked.post("/api/agents/echo/approve-tool-call", json={"runId": wipe}, headers=BOB)
    assert sse_events(done.text)[0][-1]["type"] == "finish" and example.wiped == ["/tmp/a"]
    replay = hooked.post("/api/agents/echo/observe", json={"runId": wipe}, headers=BOB)
    assert sse_events(replay.text)[0][-1]["type"] == "finish"


def test_naming_another_resource_is_403_before_any_lookup(hooked: TestClient) -> None:
    wipe, ask = _bobs_runs(hooked)
    for route, body in _decisions(wipe, ask):
        answer = hooked.post(f"/api/agents/echo/{route}", json={**body, "resourceId": "bob"}, headers=ALICE)
        assert answer.status_code == 403 and answer.json()["field"] == "resourceId", answer.text
    listed = hooked.get("/api/agents/echo/suspended-runs", params={"resourceId": "bob"}, headers=ALICE)
    assert listed.status_code == 403
    assert hooked.get("/api/agents/echo/suspended-runs", headers=BOB).json()["total"] == 2


def test_a_pinned_thread_sees_only_its_runs(hooked: TestClient) -> None:
    other, _ = suspend_as(hooked, BOB, WIPE, "t-other")
    here, _ = suspend_as(hooked, BOB, WIPE, "t-bob")
    pinned = {**BOB, "x-thread": "t-bob"}
    listed = hooked.get("/api/agents/echo/suspended-runs", headers=pinned).json()
    assert [r["runId"] for r in listed["runs"]] == [here]
    refused = hooked.post("/api/agents/echo/approve-tool-call", json={"runId": other}, headers=pinned)
    assert refused.status_code == 404
    assert hooked.post("/api/agents/echo/observe", json={"runId": other}, headers=pinned).status_code == 404
    allowed = hooked.post("/api/agents/echo/approve-tool-call", json={"runId": here}, headers=pinned)
    assert sse_events(allowed.text)[0][-1]["type"] == "finish"


def test_without_a_hook_a_named_resource_must_own_the_run(client: TestClient, example: Any) -> None:
    run_id, _ = suspend(client, memory={"thread": "t-1", "resource": "u1"})
    wrong = client.post("/api/agents/echo/approve-tool-call", json={"runId": run_id, "resourceId": "u2"})
    unknown = client.post("/api/agents/echo/approve-tool-call", json={"runId": "nope", "resourceId": "u2"})
    assert wrong.status_code == unknown.status_code == 404
    assert wrong.json()["error"].replace(run_id, "nope") == unknown.json()["error"]
    observed = client.post("/api/agents/echo/observe", json={"runId": run_id, "resourceId": "u2"})
    assert observed.status_code == 404
    assert example.wiped == []
    named = client.post("/api/agents/echo/approve-tool-call", json={"runId": run_id, "resourceId": "u1"})
    assert sse_events(named.text)[0][-1]["type"] == "finish"


def test_without_a_hook_an_unnamed_caller_acts_for_the_owner(client: TestClient, example: Any) -> None:
    """Mastra's server without auth: the client is trusted, as on every other route."""
    run_id, _ = suspend(client, memory={"thread": "t-1", "resource": "u1"})
    done = client.post("/api/agents/echo/approve-tool-call-generate", json={"runId": run_id})
    assert done.status_code == 200 and example.wiped == ["/tmp/a"]


async def test_concurrent_approvals_of_one_call_run_it_once(example: Any) -> None:
    app = create_app(example.registry, ServerSettings())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        started = await http.post("/api/agents/echo/stream", json={"messages": WIPE})
        run_id = sse_events(started.text)[0][-1]["runId"]
        routes = ["approve-tool-call", "approve-tool-call-generate", "decline-tool-call"] * 4
        answers = await asyncio.gather(
            *(http.post(f"/api/agents/echo/{route}", json={"runId": run_id}) for route in routes)
        )
    statuses = sorted(a.status_code for a in answers)
    assert statuses.count(200) == 1, [(a.status_code, a.text[:200]) for a in answers]
    assert set(statuses) <= {200, 404, 409}
    for answer in answers:
        if answer.status_code != 200:
            assert answer.json()["field"] == "runId", answer.text
    assert len(example.wiped) <= 1


def test_resume_naming_another_resources_memory_is_403(hooked: TestClient) -> None:
    run_id, _ = suspend_as(hooked, ALICE, ASK, "t-alice")
    answer = hooked.post(
        "/api/agents/echo/resume-stream",
        json={
            "runId": run_id,
            "resumeData": {"answer": "x"},
            "memory": {"thread": "t-alice", "resource": "bob"},
        },
        headers=ALICE,
    )
    assert answer.status_code == 403 and answer.json()["field"] == "memory.resource", answer.text
    pinned = {**ALICE, "x-thread": "t-alice"}
    answer = hooked.post(
        "/api/agents/echo/resume-stream",
        json={"runId": run_id, "resumeData": {"answer": "x"}, "threadId": "t-elsewhere"},
        headers=pinned,
    )
    assert answer.status_code == 403 and answer.json()["field"] == "threadId", answer.text
    done = hooked.post(
        "/api/agents/echo/resume-stream",
        json={"runId": run_id, "resumeData": {"answer": "x"}, "memory": {"thread": "t-alice"}},
        headers=pinned,
    )
    assert sse_events(done.text)[0][-1]["type"] == "finish"
