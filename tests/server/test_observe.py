"""`observe` over HTTP: every run an agent makes is in its run log (`Agent(run_log=...)`);
the route replays a run from an offset and follows it live (`Agent.observe`), with typed
answers for offsets it cannot serve and the identity rules of the decision routes."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate
from sluicegate.errors import APICallError
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.hitl_routes import _public
from sluicegate.server.streaming import chunk_event
from sluicegate.stream import Chunk, InMemoryRunLog, Payload, RunLogUnavailableError
from sluicegate.testing.echo_model import EchoModel

from .helpers import call_then_disconnect, sse_events
from .live import serve_in_thread
from .test_hitl_routes import suspend


def _events(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    events, done = sse_events(response.text)
    assert done
    return events


def _observe(client: TestClient, run_id: str, offset: int | None = None, agent: str = "echo") -> Any:
    body: dict[str, Any] = {"runId": run_id}
    if offset is not None:
        body["offset"] = offset
    return client.post(f"/api/agents/{agent}/observe", json=body)


def test_observe_replays_a_finished_stream_from_any_offset(client: TestClient) -> None:
    streamed = _events(client.post("/api/agents/echo/stream", json={"messages": "hello there"}))
    run_id = streamed[0]["runId"]
    assert _events(_observe(client, run_id)) == streamed
    assert _events(_observe(client, run_id, 0)) == streamed
    assert _events(_observe(client, run_id, 4)) == streamed[4:]
    assert _events(_observe(client, run_id, len(streamed))) == []


def test_a_resumed_run_continues_its_offsets(client: TestClient, run_log: InMemoryRunLog) -> None:
    run_id, _ = suspend(client)
    first = _events(_observe(client, run_id))
    info = asyncio.run(run_log.info(run_id))
    assert info.status == "suspended" and info.next_offset == len(first)
    rest = _events(client.post("/api/agents/echo/approve-tool-call", json={"runId": run_id}))
    assert _events(_observe(client, run_id)) == first + rest
    assert _events(_observe(client, run_id, len(first))) == rest
    assert asyncio.run(run_log.info(run_id)).status == "finished"


@pytest.fixture
def run_log(example: Any) -> Any:
    return example.echo.run_log


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({}, 400, "runId"),
        ({"runId": "RUN", "offset": -1}, 400, "offset"),
        ({"runId": "RUN", "offset": 1.5}, 400, "offset"),
        ({"runId": "RUN", "offset": "3"}, 400, "offset"),
        ({"runId": "RUN", "offset": True}, 400, "offset"),
        ({"runId": "RUN", "offset": 2**60}, 400, "offset"),
        ({"runId": "RUN", "offset": 9999}, 400, "offset"),  # past the end of a closed run
        ({"runId": "RUN", "extra": 1}, 400, "extra"),
        ({"runId": "no-such-run"}, 404, "runId"),
    ],
)
def test_observe_refuses_what_it_cannot_serve(
    client: TestClient, body: dict[str, Any], status: int, field: str
) -> None:
    run_id = _events(client.post("/api/agents/echo/stream", json={"messages": "hi"}))[0]["runId"]
    body = {k: (run_id if v == "RUN" else v) for k, v in body.items()}
    answer = client.post("/api/agents/echo/observe", json=body)
    assert answer.status_code == status and answer.json()["field"] == field, answer.text


def test_observe_through_another_agent_is_unknown(client: TestClient) -> None:
    run_id = _events(client.post("/api/agents/echo/stream", json={"messages": "hi"}))[0]["runId"]
    answer = _observe(client, run_id, agent="plain")
    assert answer.status_code == 404 and answer.json()["field"] == "runId"


def _app_with(run_log: Any) -> Any:
    return create_app(
        Sluicegate(agents={"echo": Agent(name="echo", model=EchoModel(deltas=8), run_log=run_log)})
    )


def test_dropped_chunks_answer_410_with_the_first_offset_kept() -> None:
    small = InMemoryRunLog(max_chunks=3)
    with TestClient(_app_with(small)) as client:
        streamed = _events(client.post("/api/agents/echo/stream", json={"messages": "a long enough text"}))
        run_id = streamed[0]["runId"]
        gone = _observe(client, run_id, 0)
        assert gone.status_code == 410, gone.text
        first = len(streamed) - 3
        assert gone.json() == {
            "error": f"offset: chunks before {first} of run {run_id!r} are no longer kept",
            "field": "offset",
            "firstOffset": first,
        }
        assert _events(_observe(client, run_id, first)) == streamed[first:]


def test_a_failing_log_is_503_and_never_breaks_the_stream() -> None:
    class Broken(InMemoryRunLog):
        async def open(self, run_id: str, **owner: Any) -> Any:
            raise ConnectionError("redis is down")

        async def info(self, run_id: str) -> Any:
            raise RunLogUnavailableError(run_id, "redis is down")

    with TestClient(_app_with(Broken())) as client:
        streamed = _events(client.post("/api/agents/echo/stream", json={"messages": "hi"}))
        assert streamed[-1]["type"] == "finish"
        answer = _observe(client, streamed[0]["runId"])
        assert answer.status_code == 503 and answer.json()["field"] == "runId"


def test_a_disconnect_closes_the_run_as_aborted() -> None:
    log = InMemoryRunLog()
    slow = Agent(name="slow", model=EchoModel(deltas=50, delay=0.02), run_log=log)
    app = create_app(Sluicegate(agents={"slow": slow}), ServerSettings())
    # A message long enough for the model's 50 deltas (1 s): a short one is fewer, shorter pieces.
    message = "keep going " * 10
    sent = asyncio.run(call_then_disconnect(app, "/api/agents/slow/stream", {"messages": message}, after=0.2))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()
    run_id = sse_events(body + "data: [DONE]\n\n")[0][0]["runId"]
    info = asyncio.run(log.info(run_id))
    assert info.status == "aborted" and 0 < info.next_offset < 50


def test_a_provider_error_read_back_from_json_is_made_public_again() -> None:
    """A Redis log keeps an error chunk as JSON: the route shows what the live stream showed."""
    secret = APICallError(
        "upstream said: key sk-live-123 is revoked",
        provider="openai",
        status_code=401,
        response_body="sk-live-123",
    )
    stored = Chunk.from_dict(
        json.loads(json.dumps(Chunk("error", "r-1", payload=Payload(error=secret)).to_dict()))
    )
    assert "sk-live-123" in str(stored.to_dict())  # what a Redis log holds

    async def main(details: bool) -> dict[str, Any]:
        async def chunks() -> Any:
            yield stored

        shown = [chunk_event(c, details) async for c in _public(chunks(), details)]
        return shown[0]

    shown = asyncio.run(main(details=False))
    assert "sk-live-123" not in str(shown)
    assert shown["payload"]["error"] == {
        "message": "the model provider answered 401",
        "name": stored.payload.get("error")["name"],
        "isRetryable": False,
        "statusCode": 401,
    }
    assert "sk-live-123" in str(asyncio.run(main(details=True)))


def test_observe_follows_a_live_run() -> None:
    """A second client joins a run mid-stream with the offset it wants and gets the rest live."""
    slow = Agent(name="slow", model=EchoModel(deltas=30, delay=0.03))
    app = create_app(Sluicegate(agents={"slow": slow}), ServerSettings())
    streamed: list[dict[str, Any]] = []
    joined = threading.Event()
    with serve_in_thread(app) as url:

        def first_client() -> None:
            with httpx.stream(
                "POST", url + "/api/agents/slow/stream", json={"messages": "go"}, timeout=30
            ) as r:
                buffer = ""
                for text in r.iter_text():
                    buffer += text
                    *records, buffer = buffer.split("\n\n")
                    for record in records:
                        if record.startswith("data: {"):
                            streamed.append(json.loads(record[6:]))
                    if len(streamed) >= 5:
                        joined.set()

        reader = threading.Thread(target=first_client)
        reader.start()
        assert joined.wait(20)
        run_id = streamed[0]["runId"]
        observed = httpx.post(
            url + "/api/agents/slow/observe", json={"runId": run_id, "offset": 3}, timeout=30
        )
        reader.join(30)
    events, done = sse_events(observed.text)
    assert done and streamed[-1]["type"] == "finish"
    assert events == streamed[3:]


def test_a_follower_is_let_go_at_the_request_timeout_and_the_run_goes_on() -> None:
    log = InMemoryRunLog()
    agent = Agent(name="echo", model=EchoModel(), run_log=log)

    async def main() -> tuple[list[dict[str, Any]], Any]:
        writer = await log.open("r-open", agent_id=agent.id)
        writer.append(Chunk("start", "r-open", payload={}))
        app = create_app(Sluicegate(agents={"echo": agent}), ServerSettings(request_timeout=0.3))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            answer = await http.post("/api/agents/echo/observe", json={"runId": "r-open"})
        writer.append(Chunk("finish", "r-open", payload={}))
        return sse_events(answer.text)[0], await log.info("r-open")

    events, info = asyncio.run(main())
    assert [e["type"] for e in events] == ["start", "error"]
    assert events[-1]["payload"]["error"]["message"].startswith("stopped following the run after 0.3 s")
    assert info.status is None and info.next_offset == 2  # the run was not touched
