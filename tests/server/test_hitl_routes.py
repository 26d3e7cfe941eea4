"""Human-in-the-loop routes over HTTP: approve, decline (streamed and to the end), resume a
suspended tool, list the waiting runs, and every bad input answered 4xx naming the field.

The example app's echo agent calls a tool when told `/tool <name> <JSON args>`: `wipe` needs an
approval, `ask` suspends itself until it gets `{"answer": ...}`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluicegate.server import ServerSettings

from .helpers import sse_events

WIPE = '/tool wipe {"path": "/tmp/a"}'
ASK = '/tool ask {"question": "Which colour?"}'


def _events(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events, done = sse_events(response.text)
    assert done
    return events


def suspend(client: TestClient, text: str = WIPE, **body: Any) -> tuple[str, dict[str, Any]]:
    """Stream `text` until the run waits on a person: its run id and last chunk."""
    events = _events(client.post("/api/agents/echo/stream", json={"messages": text, **body}))
    assert events[-1]["type"] in ("tool-call-approval", "tool-call-suspended"), events
    return events[-1]["runId"], events[-1]


# ----------------------------------------------------------------------------- happy paths


def test_approve_streams_the_rest_of_the_run(client: TestClient, example: Any) -> None:
    run_id, asked = suspend(client, memory={"thread": "t-1", "resource": "u1"})
    assert asked["payload"]["toolName"] == "wipe" and asked["payload"]["args"] == {"path": "/tmp/a"}
    assert example.wiped == []
    events = _events(
        client.post(
            "/api/agents/echo/approve-tool-call",
            json={"runId": run_id, "toolCallId": asked["payload"]["toolCallId"]},
        )
    )
    assert [e["type"] for e in events][:2] == ["tool-result", "step-finish"]
    assert events[0]["payload"]["result"] == {"wiped": "/tmp/a"}
    assert events[-1]["type"] == "finish" and {e["runId"] for e in events} == {run_id}
    assert example.wiped == ["/tmp/a"]
    text = "".join(e["payload"]["text"] for e in events if e["type"] == "text-delta")
    assert text == 'Tool wipe said: {"wiped": "/tmp/a"}'
    assert client.get("/api/agents/echo/suspended-runs").json() == {"runs": [], "total": 0}
    # the conversation holds the whole run, the tool's result included
    messages = client.get("/api/memory/threads/t-1/messages").json()["messages"]
    assert messages[0]["role"] == "user" and "wiped" in json.dumps(messages)


def test_decline_never_runs_the_tool_and_the_model_reads_the_reason(client: TestClient, example: Any) -> None:
    run_id, _ = suspend(client)
    events = _events(
        client.post("/api/agents/echo/decline-tool-call", json={"runId": run_id, "reason": "not that file"})
    )
    denied = [e for e in events if e["type"] == "tool-output-denied"]
    assert len(denied) == 1 and denied[0]["payload"]["reason"] == "not that file"
    assert example.wiped == []
    text = "".join(e["payload"]["text"] for e in events if e["type"] == "text-delta")
    assert text == 'Tool wipe said: "not that file"'


def test_generate_variants_return_the_full_output(client: TestClient, example: Any) -> None:
    first = client.post("/api/agents/echo/generate", json={"messages": WIPE})
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["finishReason"] == "suspended"
    assert body["suspendPayload"]["toolName"] == "wipe" and body["suspendPayload"]["args"] == {
        "path": "/tmp/a"
    }
    approved = client.post("/api/agents/echo/approve-tool-call-generate", json={"runId": body["runId"]})
    assert approved.status_code == 200, approved.text
    result = approved.json()
    assert result["finishReason"] == "stop" and result["runId"] == body["runId"]
    assert result["text"] == 'Tool wipe said: {"wiped": "/tmp/a"}' and "suspendPayload" not in result
    assert example.wiped == ["/tmp/a"]

    second = client.post("/api/agents/echo/generate", json={"messages": WIPE}).json()
    declined = client.post(
        "/api/agents/echo/decline-tool-call-generate", json={"runId": second["runId"], "reason": "no"}
    )
    assert declined.status_code == 200 and declined.json()["text"] == 'Tool wipe said: "no"'
    assert example.wiped == ["/tmp/a"]


def test_resume_stream_runs_the_suspended_tool_with_the_data(client: TestClient) -> None:
    run_id, asked = suspend(client, ASK)
    assert asked["type"] == "tool-call-suspended"
    assert asked["payload"]["suspendPayload"] == {"question": "Which colour?"}
    # data the tool's resume schema refuses: 400 naming resumeData, and the run still waits
    refused = client.post(
        "/api/agents/echo/resume-stream", json={"runId": run_id, "resumeData": {"colour": 1}}
    )
    assert refused.status_code == 400 and refused.json()["field"] == "resumeData"
    assert "answer" in refused.json()["error"]
    assert client.get("/api/agents/echo/suspended-runs").json()["total"] == 1
    events = _events(
        client.post(
            "/api/agents/echo/resume-stream",
            json={
                "runId": run_id,
                "resumeData": {"answer": "blue"},
                "maxSteps": 3,
                "requestContext": {"k": 1},
            },
        )
    )
    assert events[0]["type"] == "tool-result" and events[0]["payload"]["result"] == {"answer": "blue"}
    assert events[-1]["type"] == "finish"


def test_require_tool_approval_on_a_call_holds_any_tool(client: TestClient) -> None:
    run_id, asked = suspend(client, '/tool add {"a": 2, "b": 3}', requireToolApproval=True)
    assert asked["type"] == "tool-call-approval" and asked["payload"]["toolName"] == "add"
    events = _events(client.post("/api/agents/echo/approve-tool-call", json={"runId": run_id}))
    assert events[0]["payload"]["result"] == {"sum": 5}
    plain = _events(client.post("/api/agents/echo/stream", json={"messages": '/tool add {"a": 2, "b": 3}'}))
    assert "tool-call-approval" not in [e["type"] for e in plain]


# ----------------------------------------------------------------------------- listing


def test_list_suspended_runs_in_mastras_shape(client: TestClient) -> None:
    wipe_run, asked = suspend(client, memory={"thread": "t-1", "resource": "u1"})
    ask_run, _ = suspend(client, ASK, memory={"thread": "t-2", "resource": "u2"})
    listed = client.get("/api/agents/echo/suspended-runs")
    assert listed.status_code == 200
    body = listed.json()
    assert body["total"] == 2 and [r["runId"] for r in body["runs"]] == [ask_run, wipe_run]  # newest first
    wipe = body["runs"][1]
    assert wipe["status"] == "suspended" and wipe["threadId"] == "t-1" and wipe["resourceId"] == "u1"
    assert datetime.fromisoformat(wipe["suspendedAt"]) <= datetime.now(UTC)
    assert wipe["toolCalls"] == [
        {
            "toolCallId": asked["payload"]["toolCallId"],
            "toolName": "wipe",
            "args": {"path": "/tmp/a"},
            "requiresApproval": True,
        }
    ]
    ask = body["runs"][0]["toolCalls"][0]
    assert ask["requiresApproval"] is False and ask["suspendPayload"] == {"question": "Which colour?"}

    def ids(**params: Any) -> list[str]:
        answer = client.get("/api/agents/echo/suspended-runs", params=params)
        assert answer.status_code == 200, answer.text
        return [r["runId"] for r in answer.json()["runs"]]

    assert ids(threadId="t-1") == [wipe_run]
    assert ids(resourceId="u2") == [ask_run]
    assert ids(resourceId="nobody") == []
    assert ids(perPage=1, page=1) == [wipe_run]
    paged = client.get("/api/agents/echo/suspended-runs", params={"perPage": 1}).json()
    assert paged["total"] == 2 and len(paged["runs"]) == 1
    later = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    earlier = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    assert ids(fromDate=later) == [] and ids(toDate=earlier) == []
    assert sorted(ids(fromDate=earlier, toDate=later)) == sorted([wipe_run, ask_run])
    assert client.get("/api/agents/plain/suspended-runs").json()["total"] == 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"fromDate": "2026-13-45"}, "fromDate"),
        ({"fromDate": "2026-01-02T00:00:00Z", "toDate": "2026-01-01T00:00:00Z"}, "fromDate"),
        ({"perPage": 0}, "perPage"),
        ({"page": -1}, "page"),
        ({"threadId": "x" * 300}, "threadId"),
    ],
)
def test_listing_refuses_bad_queries(client: TestClient, params: dict[str, Any], field: str) -> None:
    answer = client.get("/api/agents/echo/suspended-runs", params=params)
    assert answer.status_code == 400 and answer.json()["field"] == field, answer.text


# ----------------------------------------------------------------------------- refusals


def test_unknown_and_finished_runs_answer_404_naming_run_id(client: TestClient) -> None:
    unknown = client.post("/api/agents/echo/approve-tool-call", json={"runId": "no-such-run"})
    assert unknown.status_code == 404 and unknown.json() == {
        "error": "runId: no suspended run 'no-such-run'",
        "field": "runId",
    }
    run_id, _ = suspend(client)
    _events(client.post("/api/agents/echo/approve-tool-call", json={"runId": run_id}))
    for route in ("approve-tool-call", "decline-tool-call", "approve-tool-call-generate"):
        again = client.post(f"/api/agents/echo/{route}", json={"runId": run_id})
        assert again.status_code == 404 and again.json()["field"] == "runId", again.text
    again = client.post("/api/agents/echo/resume-stream", json={"runId": run_id, "resumeData": {}})
    assert again.status_code == 404
    assert client.post("/api/agents/nobody/approve-tool-call", json={"runId": run_id}).status_code == 404


def test_a_run_of_another_agent_is_unknown_here(make_client: Any, example: Any) -> None:
    from sluicegate import Sluicegate

    registry = Sluicegate(agents={"echo": example.echo, "plain": example.plain}, storage=example.storage)
    example.plain.suspended_run_store = example.echo.suspended_run_store  # one store for both agents
    client = make_client(registry=registry)
    run_id, _ = suspend(client)
    answer = client.post("/api/agents/plain/approve-tool-call", json={"runId": run_id})
    assert answer.status_code == 404 and answer.json()["field"] == "runId"
    assert client.get("/api/agents/echo/suspended-runs").json()["total"] == 1


def test_a_stale_tool_call_id_is_409_and_changes_nothing(client: TestClient, example: Any) -> None:
    run_id, asked = suspend(client)
    stale = client.post(
        "/api/agents/echo/approve-tool-call", json={"runId": run_id, "toolCallId": "call_not_this_one"}
    )
    assert stale.status_code == 409 and stale.json()["field"] == "toolCallId", stale.text
    assert asked["payload"]["toolCallId"] in stale.json()["error"]  # the owner is told what is pending
    assert example.wiped == []
    assert client.get("/api/agents/echo/suspended-runs").json()["total"] == 1
    _events(client.post("/api/agents/echo/approve-tool-call", json={"runId": run_id}))


def test_the_wrong_decision_for_the_call_is_409(client: TestClient) -> None:
    asking, _ = suspend(client, ASK)
    wrong = client.post("/api/agents/echo/approve-tool-call", json={"runId": asking})
    assert wrong.status_code == 409 and wrong.json()["field"] == "toolCallId", wrong.text
    approving, _ = suspend(client)
    wrong = client.post(
        "/api/agents/echo/resume-stream", json={"runId": approving, "resumeData": {"answer": "x"}}
    )
    assert wrong.status_code == 409 and wrong.json()["field"] == "toolCallId", wrong.text
    assert client.get("/api/agents/echo/suspended-runs").json()["total"] == 2


LONG_REASON = "r" * 4001


@pytest.mark.parametrize(
    ("route", "body", "status", "field"),
    [
        ("approve-tool-call", {}, 400, "runId"),
        ("approve-tool-call", {"runId": ""}, 400, "runId"),
        ("approve-tool-call", {"runId": "x" * 1025}, 400, "runId"),
        ("approve-tool-call", {"runId": "a\x00b"}, 400, "runId"),
        ("approve-tool-call", {"runId": 5}, 400, "runId"),
        ("approve-tool-call", {"runId": "RUN", "toolCallId": ""}, 400, "toolCallId"),
        ("approve-tool-call", {"runId": "RUN", "format": "aisdk"}, 400, "format"),
        ("approve-tool-call", {"runId": "RUN", "model": "openai/gpt-5"}, 400, "model"),
        ("approve-tool-call", {"runId": "RUN", "messages": "hi"}, 400, "messages"),
        ("approve-tool-call", {"runId": "RUN", "requestContext": {"mastra__resourceId": "x"}}, 400, None),
        ("approve-tool-call", {"runId": "RUN", "resourceId": ""}, 400, "resourceId"),
        ("decline-tool-call", {"runId": "RUN", "reason": LONG_REASON}, 400, "reason"),
        ("decline-tool-call", {"runId": "RUN", "reason": 7}, 400, "reason"),
        ("decline-tool-call-generate", {"runId": "RUN", "reason": "\ud800"}, 400, "reason"),
        ("resume-stream", {"runId": "RUN"}, 400, "resumeData"),
        ("resume-stream", {"runId": "RUN", "resumeData": float("nan")}, 400, "resumeData"),
        ("resume-stream", {"runId": "RUN", "resumeData": {}, "maxSteps": 10_000}, 400, "maxSteps"),
        ("resume-stream", {"runId": "RUN", "resumeData": {}, "instructions": "obey"}, 400, "instructions"),
        ("resume-stream", {"runId": "RUN", "resumeData": {}, "messages": ["hi"]}, 400, "messages"),
        (
            "resume-stream",
            {"runId": "RUN", "resumeData": {}, "memory": {"thread": "t", "options": {"lastMessages": 99}}},
            400,
            "memory.options",
        ),
        ("resume-stream", {"runId": "RUN", "resumeData": {}, "modelSettings": {"temperature": 9}}, 400, None),
    ],
)
def test_bad_input_is_4xx_naming_the_field(
    client: TestClient, example: Any, route: str, body: dict[str, Any], status: int, field: str | None
) -> None:
    run_id, _ = suspend(client, ASK if route == "resume-stream" else WIPE)
    body = {k: (run_id if v == "RUN" else v) for k, v in body.items()}
    raw = json.dumps(body)  # NaN and lone surrogates as a client could send them
    answer = client.post(
        f"/api/agents/echo/{route}", content=raw, headers={"content-type": "application/json"}
    )
    assert answer.status_code == status, answer.text
    if field is not None:
        assert answer.json()["field"] == field, answer.text
    else:
        assert "field" in answer.json()
    assert example.wiped == []
    listed = client.get("/api/agents/echo/suspended-runs").json()
    assert [r["runId"] for r in listed["runs"]] == [run_id], "a refused decision leaves the run waiting"


def test_a_one_megabyte_reason_is_refused_whole(client: TestClient) -> None:
    run_id, _ = suspend(client)
    answer = client.post(
        "/api/agents/echo/decline-tool-call", json={"runId": run_id, "reason": "x" * 1_000_000}
    )
    assert answer.status_code == 413
    under_limit = client.post(
        "/api/agents/echo/decline-tool-call", json={"runId": run_id, "reason": "x" * 900_000}
    )
    assert under_limit.status_code == 400 and under_limit.json()["field"] == "reason"
    assert client.get("/api/agents/echo/suspended-runs").json()["total"] == 1


def test_resume_naming_another_conversation_is_unknown(client: TestClient) -> None:
    run_id, _ = suspend(client, ASK, memory={"thread": "t-1", "resource": "u1"})
    for extra in (
        {"memory": {"thread": "t-other", "resource": "u1"}},
        {"memory": {"thread": "t-1", "resource": "u-other"}},
        {"threadId": "t-other"},
        {"resourceId": "u-other"},
    ):
        answer = client.post(
            "/api/agents/echo/resume-stream", json={"runId": run_id, "resumeData": {"answer": "x"}, **extra}
        )
        assert answer.status_code == 404 and answer.json()["field"] == "runId", (extra, answer.text)
    named = client.post(
        "/api/agents/echo/resume-stream",
        json={
            "runId": run_id,
            "resumeData": {"answer": "x"},
            "memory": {"thread": {"id": "t-1"}, "resource": "u1"},
        },
    )
    assert _events(named)[-1]["type"] == "finish"


def test_client_model_override_follows_the_server_setting(make_client: Any) -> None:
    client = make_client(ServerSettings(allow_client_overrides=True))
    run_id, _ = suspend(client)
    answer = client.post("/api/agents/echo/approve-tool-call", json={"runId": run_id, "model": "nobody/none"})
    assert answer.status_code == 400 and "field" in answer.json(), answer.text
