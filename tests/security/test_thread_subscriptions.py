"""Thread subscriptions never ended (issue 30, finding 5): with `--max-connections 50`, 50
open `threads/subscribe` streams locked everyone else out for as long as they were held, and
with no heartbeat a peer that went away was never noticed. Now a quiet stream gets a
`: heartbeat` comment line, subscriptions are bounded per resource and per process (by
default half the connection cap, so other requests always get in), a subscription ends
between runs after its lifetime, and a subscriber that hangs up gives its slot back.

Served for real (uvicorn in a thread, the guarded protocol of `sluicegate serve`)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from tests.server.live import serve_in_thread

from sluicegate import Agent, Sluicegate
from sluicegate.memory import Memory
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.connections import DEAD_PEER_TIMEOUT, notice_dead_peers, protocol_class
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel


def _app(settings: ServerSettings) -> Any:
    storage = SQLiteStore(":memory:")
    agent = Agent(name="remembering", model=EchoModel(deltas=4, delay=0.2), memory=Memory(storage=storage))
    return create_app(Sluicegate(agents={"remembering": agent}, storage=storage), settings)


@contextmanager
def _serve(**options: Any) -> Iterator[tuple[str, Any]]:
    settings = ServerSettings(**options)
    app = _app(settings)
    with serve_in_thread(app, http=protocol_class(settings, "h11")) as url:
        yield url, app


class Stream:
    """One subscription read line by line by a thread of its own."""

    def __init__(self, url: str, resource: str, thread: str = "t1") -> None:
        self.lines: list[str] = []
        self.status: int | None = None
        self.ended = threading.Event()
        self._opened = threading.Event()
        self._socket: socket.socket | None = None
        self._reader = threading.Thread(target=self._read, args=(url, resource, thread), daemon=True)
        self._reader.start()
        assert self._opened.wait(10)

    def _read(self, url: str, resource: str, thread: str) -> None:
        try:
            with (
                httpx.Client(timeout=30) as client,
                client.stream(
                    "POST",
                    f"{url}/api/agents/remembering/threads/subscribe",
                    json={"threadId": thread, "resourceId": resource},
                ) as answer,
            ):
                self._socket = answer.extensions["network_stream"].get_extra_info("socket")
                self.status = answer.status_code
                self._opened.set()
                for line in answer.iter_lines():
                    self.lines.append(line)
        except httpx.TransportError:
            pass
        finally:
            self._opened.set()
            self.ended.set()

    def hang_up(self) -> None:
        if self._socket is not None and not self.ended.is_set():
            self._socket.shutdown(socket.SHUT_RDWR)
        self._reader.join(10)


@contextmanager
def _subscriptions() -> Iterator[list[Stream]]:
    streams: list[Stream] = []
    try:
        yield streams
    finally:
        for stream in streams:
            stream.hang_up()


def _wait(condition: Any, seconds: float, failure: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.02)


def test_subscriptions_cannot_take_every_connection() -> None:
    """The finding: `--max-connections 6` and subscriptions opened until refused. At most half
    the connections are subscriptions (429 naming the bound beyond), and the API answers."""
    with _serve(max_connections=6, max_subscriptions_per_resource=100) as (url, _), _subscriptions() as held:
        for i in range(6):
            stream = Stream(url, f"r{i}", f"t{i}")
            held.append(stream)
            if stream.status != 200:
                break
        assert [s.status for s in held] == [200, 200, 200, 429]
        refused = httpx.post(
            f"{url}/api/agents/remembering/threads/subscribe", json={"threadId": "t", "resourceId": "x"}
        )
        assert refused.status_code == 429
        assert refused.json()["bound"] == "max_subscriptions" and refused.json()["limit"] == 3
        assert refused.headers["retry-after"] == "30"
        assert httpx.get(f"{url}/api/agents", timeout=5).status_code == 200


def test_one_resource_is_bounded_and_a_hang_up_gives_the_slot_back() -> None:
    with _serve(max_subscriptions_per_resource=2) as (url, app), _subscriptions() as held:
        held.extend(Stream(url, "mallory", f"t{i}") for i in range(3))
        assert [s.status for s in held] == [200, 200, 429]
        assert held[2].ended.wait(5)
        assert "max_subscriptions_per_resource" in "\n".join(held[2].lines)
        assert Stream(url, "alice").status == 200  # another resource is not held back
        held[0].hang_up()
        _wait(lambda: app.state.subscriptions.held_by("mallory") == 1, 10, "the hang-up kept its slot")
        again = Stream(url, "mallory", "t9")
        held.append(again)
        assert again.status == 200


def test_a_quiet_subscription_gets_heartbeats() -> None:
    with _serve(heartbeat_interval=0.2) as (url, _), _subscriptions() as held:
        stream = Stream(url, "r1")
        held.append(stream)
        _wait(lambda: stream.lines.count(": heartbeat") >= 3, 10, f"no heartbeats: {stream.lines}")
        assert not any(line.startswith("data:") for line in stream.lines)


def test_a_subscription_ends_between_runs_after_its_lifetime() -> None:
    """A run under way when the lifetime passes (it takes about 1.4 s) is streamed to its end
    first."""
    with _serve(subscription_max_age=0.6) as (url, app), _subscriptions() as held:
        stream = Stream(url, "r1")
        held.append(stream)
        sent = httpx.post(
            f"{url}/api/agents/remembering/send-message",
            json={"threadId": "t1", "resourceId": "r1", "message": "one two three four five six"},
        )
        assert sent.status_code == 200
        assert stream.ended.wait(10), "the subscription outlived its lifetime"
        data = [line for line in stream.lines if line.startswith("data: ")]
        assert '"type":"finish"' in data[-2] and data[-1] == "data: [DONE]"
        _wait(lambda: app.state.subscriptions.held == 0, 5, "an ended subscription kept its slot")


def test_the_bounds_are_settings_and_environment_variables(monkeypatch: Any) -> None:
    monkeypatch.setenv("SLUICEGATE_MAX_SUBSCRIPTIONS", "9")
    monkeypatch.setenv("SLUICEGATE_MAX_SUBSCRIPTIONS_PER_RESOURCE", "3")
    monkeypatch.setenv("SLUICEGATE_SUBSCRIPTION_MAX_AGE", "60")
    monkeypatch.setenv("SLUICEGATE_HEARTBEAT_INTERVAL", "5")
    settings = ServerSettings.from_env()
    assert settings.max_subscriptions == 9 and settings.max_subscriptions_per_resource == 3
    assert settings.subscription_max_age == 60.0 and settings.heartbeat_interval == 5.0
    defaults = ServerSettings()
    assert defaults.max_subscriptions is None and defaults.max_subscriptions_per_resource == 8
    assert defaults.heartbeat_interval == 25.0 and defaults.subscription_max_age == 3600.0


def test_an_accepted_socket_drops_a_vanished_peer_within_the_dead_peer_timeout() -> None:
    """A half-open peer (it vanished without FIN or RST) acknowledges nothing: with
    `TCP_USER_TIMEOUT` the kernel drops the connection after `DEAD_PEER_TIMEOUT` seconds of
    unacknowledged heartbeats, instead of ~15 minutes of retransmissions."""
    if not hasattr(socket, "TCP_USER_TIMEOUT"):
        assert not notice_dead_peers(socket.socket())
        return
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with client, accepted:
            assert notice_dead_peers(accepted)
            set_ms = accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT)
            assert set_ms == int(DEAD_PEER_TIMEOUT * 1000) == 120_000
    assert not notice_dead_peers(None)


async def test_every_event_stream_gets_heartbeats_when_quiet() -> None:
    """Not only subscriptions: `/stream` (and `observe`, the decisions) of a model that is slow
    to speak get the comment line too, and clients skip it."""
    app = _app(ServerSettings(heartbeat_interval=0.05))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=30) as http:
        answer = await http.post("/api/agents/remembering/stream", json={"messages": "one two"})
    assert answer.status_code == 200
    lines = [line for line in answer.text.split("\n\n") if line]
    assert ": heartbeat" in lines
    data = [line for line in lines if line.startswith("data: ")]
    assert len(data) + lines.count(": heartbeat") == len(lines) and data[-1] == "data: [DONE]"
