"""Mastra's agent signals as Studio's chat uses them: a thread subscription carries every run of
the thread (those `send-message` starts, after the user's message, and those a plain stream
starts), only to the thread's own resource; `send-message` starts a run on an idle thread and
refuses what it cannot honour; `threads/abort` cancels the run it started.

Served for real (uvicorn in a thread): a subscription is an endless SSE stream."""

from __future__ import annotations

import json
import queue
import socket
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import pytest
from fastapi import Request
from tests.server.live import serve_in_thread

from sluicegate import Agent, Sluicegate
from sluicegate.identity import Identity
from sluicegate.memory import Memory
from sluicegate.server import ServerSettings, create_app
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel


def _users(request: Request) -> Identity | None:
    user = request.headers.get("x-user")
    return None if user is None else Identity(resource_id=user)


def _registry(*, identity: bool = False, delay: float = 0.0) -> Sluicegate:
    storage = SQLiteStore(":memory:")
    remembering = Agent(
        name="remembering", model=EchoModel(deltas=4, delay=delay), memory=Memory(storage=storage)
    )
    plain = Agent(name="plain", model=EchoModel(deltas=2))
    unlogged = Agent(name="unlogged", model=EchoModel(deltas=2), memory=Memory(storage=storage), run_log=None)
    return Sluicegate(
        agents={"remembering": remembering, "plain": plain, "unlogged": unlogged},
        storage=storage,
        resolve_identity=_users if identity else None,
    )


@pytest.fixture
def server() -> Iterator[Any]:
    def start(**options: Any) -> Any:
        return stack.enter_context(
            # With its lifespan, as `sluicegate serve` runs it: stopping it closes the trace writer.
            serve_in_thread(create_app(_registry(**options), ServerSettings(studio=True)), lifespan="on")
        )

    with ExitStack() as stack:
        yield start


class Subscription:
    """The parsed events of one open subscription, read by a thread of its own."""

    def __init__(self) -> None:
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.status: int | None = None
        self.opened = threading.Event()

    def next(self, timeout: float = 10) -> dict[str, Any]:
        return self.events.get(timeout=timeout)

    def until(self, kind: str, timeout: float = 10) -> list[dict[str, Any]]:
        seen = []
        while True:
            event = self.next(timeout)
            seen.append(event)
            if event["type"] == kind:
                return seen


@contextmanager
def subscribe(
    url: str, agent: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Iterator[Any]:
    sub = Subscription()
    stop = threading.Event()
    sockets: list[socket.socket] = []

    def read() -> None:
        with (
            httpx.Client(timeout=30) as client,
            client.stream(
                "POST", f"{url}/api/agents/{agent}/threads/subscribe", json=body, headers=headers or {}
            ) as answer,
        ):
            sockets.append(answer.extensions["network_stream"].get_extra_info("socket"))
            sub.status = answer.status_code
            sub.opened.set()
            try:
                for line in answer.iter_lines():
                    if line.startswith("data: {"):
                        sub.events.put(json.loads(line[6:]))
            except httpx.TransportError:
                if not stop.is_set():
                    raise

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert sub.opened.wait(10)
    try:
        yield sub
    finally:
        # Hang up, as a closed browser tab does: the server ends the endless stream, and
        # stopping the server later need not wait for it.
        stop.set()
        sockets[0].shutdown(socket.SHUT_RDWR)
        reader.join(10)


def test_send_message_runs_on_the_thread_and_subscribers_get_the_message_then_the_run(server: Any) -> None:
    url = server()
    with subscribe(url, "remembering", {"threadId": "t1", "resourceId": "r1"}) as sub:
        assert sub.status == 200
        sent = httpx.post(
            f"{url}/api/agents/remembering/send-message",
            json={
                "threadId": "t1",
                "resourceId": "r1",
                "message": {"contents": "hello there", "metadata": {"client": "m-1"}},
                "ifIdle": {"streamOptions": {"maxSteps": 3, "modelSettings": {"temperature": 0.5}}},
            },
        )
        assert sent.status_code == 200, sent.text
        answer = sent.json()
        assert answer["accepted"] is True and answer["signal"]["type"] == "user-message"
        events = sub.until("finish")
        first = events[0]
        assert first["type"] == "data-user-message" and first["transient"] is True
        assert first["data"]["id"] == answer["signal"]["id"]
        assert first["data"]["contents"] == "hello there" and first["data"]["metadata"] == {"client": "m-1"}
        assert {e["runId"] for e in events} == {answer["runId"]}
        text = "".join(e["payload"]["text"] for e in events if e["type"] == "text-delta")
        assert "hello there" in text
        # A run a plain stream starts on the thread reaches the subscriber too, without a message part.
        streamed = httpx.post(
            f"{url}/api/agents/remembering/stream",
            json={"messages": "second", "memory": {"thread": "t1", "resource": "r1"}},
        )
        assert streamed.status_code == 200
        events = sub.until("finish")
        assert events[0]["type"] != "data-user-message"
        assert "second" in "".join(e["payload"]["text"] for e in events if e["type"] == "text-delta")
    stored = httpx.get(
        f"{url}/api/memory/threads/t1/messages", params={"resourceId": "r1", "agentId": "remembering"}
    )
    messages = stored.json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[0]["id"] == answer["signal"]["id"], "the message is stored under the signal's id"


def test_a_subscription_skips_another_resources_run_on_the_same_thread_id(server: Any) -> None:
    url = server(identity=True)
    with (
        subscribe(url, "remembering", {"threadId": "t-x"}, {"x-user": "alice"}) as alices,
        subscribe(url, "remembering", {"threadId": "t-x"}, {"x-user": "bob"}) as bobs,
    ):
        sent = httpx.post(
            f"{url}/api/agents/remembering/send-message",
            json={"threadId": "t-x", "message": "bob's secret"},
            headers={"x-user": "bob"},
        )
        assert sent.status_code == 200, sent.text
        assert bobs.until("finish")[0]["data"]["contents"] == "bob's secret"
        with pytest.raises(queue.Empty):
            alices.next(timeout=1)
    # Now the thread is bob's: alice can neither follow it nor message it.
    refused = httpx.post(
        f"{url}/api/agents/remembering/threads/subscribe",
        json={"threadId": "t-x"},
        headers={"x-user": "alice"},
    )
    assert refused.status_code == 404
    taken = httpx.post(
        f"{url}/api/agents/remembering/send-message",
        json={"threadId": "t-x", "message": "hi"},
        headers={"x-user": "alice"},
    )
    assert taken.status_code == 409


def test_a_second_message_while_a_run_is_active_is_refused_and_abort_cancels_it(server: Any) -> None:
    url = server(delay=0.5)
    body = {"threadId": "t2", "resourceId": "r2", "message": "slow words come one by one"}
    with subscribe(url, "remembering", {"threadId": "t2", "resourceId": "r2"}) as sub:
        first = httpx.post(f"{url}/api/agents/remembering/send-message", json=body)
        assert first.status_code == 200
        run_id = first.json()["runId"]
        sub.until("start")
        busy = httpx.post(f"{url}/api/agents/remembering/queue-message", json=body)
        assert busy.status_code == 409 and busy.json()["field"] == "threadId"
        wrong = httpx.post(
            f"{url}/api/agents/remembering/threads/abort",
            json={"threadId": "t2", "resourceId": "r2", "expectedRunId": "another"},
        )
        assert wrong.json() == {"aborted": False}
        aborted = httpx.post(
            f"{url}/api/agents/remembering/threads/abort",
            json={"threadId": "t2", "resourceId": "r2", "expectedRunId": run_id},
        )
        assert aborted.json() == {"aborted": True}
        events = _drain(sub)
        assert not any(e["type"] == "finish" for e in events)
    again = httpx.post(f"{url}/api/agents/remembering/send-message", json=body)
    assert again.status_code == 200, "the aborted run no longer holds the thread"


def _drain(sub: Subscription) -> list[dict[str, Any]]:
    events = []
    while True:
        try:
            events.append(sub.next(timeout=1.5))
        except queue.Empty:
            return events


@pytest.mark.parametrize(
    ("agent", "body", "status", "field"),
    [
        (
            "remembering",
            {"threadId": "t", "message": "hi", "ifActive": {"behavior": "deliver"}},
            400,
            "ifActive",
        ),
        (
            "remembering",
            {"threadId": "t", "message": "hi", "ifIdle": {"streamOptions": {"memory": {"thread": "other"}}}},
            400,
            "ifIdle.streamOptions.memory",
        ),
        (
            "remembering",
            {"threadId": "t", "message": "hi", "ifIdle": {"streamOptions": {"maxSteps": 0}}},
            400,
            "ifIdle.streamOptions.maxSteps",
        ),
        ("remembering", {"threadId": "t", "message": "hi", "ifIdle": {"attributes": {"a": 1}}}, 400, None),
        ("plain", {"threadId": "t", "message": "hi"}, 400, "threadId"),
        ("unlogged", {"threadId": "t", "message": "hi"}, 501, None),
        ("nobody", {"threadId": "t", "message": "hi"}, 404, None),
    ],
)
def test_send_message_refuses_what_it_cannot_honour(
    server: Any, agent: str, body: dict[str, Any], status: int, field: str | None
) -> None:
    url = server()
    answer = httpx.post(f"{url}/api/agents/{agent}/send-message", json=body)
    assert answer.status_code == status, answer.text
    if field is not None:
        assert answer.json()["field"] == field


def test_an_agent_without_a_run_log_cannot_be_subscribed(server: Any) -> None:
    url = server()
    answer = httpx.post(f"{url}/api/agents/unlogged/threads/subscribe", json={"threadId": "t"})
    assert answer.status_code == 501
    assert httpx.post(f"{url}/api/agents/nobody/threads/subscribe", json={"threadId": "t"}).status_code == 404


async def test_a_pending_message_is_claimed_only_by_a_run_of_its_senders_resource() -> None:
    """Another resource's run opened on the same thread id first does not take (and so show
    its subscribers) the message `send-message` is starting a run with."""
    from sluicegate.server.mastra.signals import ThreadRunLog
    from sluicegate.stream.run_log import InMemoryRunLog

    log = ThreadRunLog(InMemoryRunLog())
    thread = log.thread("t1")
    signal = {"id": "s1", "type": "user-message", "contents": "alice's secret"}
    thread.pending, thread.pending_resource = signal, "alice"
    await log.open("run-bob", agent_id="remembering", resource_id="bob", thread_id="t1")
    assert thread.signal is None
    assert thread.pending is signal
    await log.open("run-alice", agent_id="remembering", resource_id="alice", thread_id="t1")
    assert thread.signal == ("run-alice", signal)
    assert thread.pending is None
