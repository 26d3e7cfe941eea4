"""Stalled connections (finding 5): a socket that never finishes its request is closed after the
read deadline, and connections beyond the per-process cap are answered 503 at once, so the
server keeps answering everyone else. Real servers on 127.0.0.1 only, each test bounded."""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI, WebSocket
from tests.server.live import free_port, serve_in_thread

from sluicegate import Agent, Sluicegate
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.connections import protocol_class
from sluicegate.testing.echo_model import EchoModel

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "tests/server/example_app.py"
STALLED = 1100
PARTIAL_HEADERS = b"GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
PARTIAL_BODY = (
    b"POST /api/agents/echo/generate HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"content-type: application/json\r\ncontent-length: 200\r\n\r\n"
    b'{"messages": "hi'
)


@pytest.fixture(autouse=True)
def enough_descriptors() -> Iterator[None]:
    """Both ends of 1,100 sockets live in this process with an in-process server: raise the
    soft open-file limit (not the hard one) for the test, and restore it."""
    need = 2 * STALLED + 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"needs {need} open files; the hard limit is {hard} (raise it with ulimit -Hn)")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture(params=["h11", "httptools"])
def http(request: pytest.FixtureRequest) -> str:
    """Both of uvicorn's HTTP/1.1 protocols (httptools only when installed: it is in the lock,
    so CI, which sets SLUICEGATE_REQUIRE_SERVICES, fails rather than skips without it)."""
    if request.param == "httptools" and not os.environ.get("SLUICEGATE_REQUIRE_SERVICES"):
        pytest.importorskip("httptools")
    return str(request.param)


@contextmanager
def serve(http: str, **settings: object) -> Iterator[int]:
    agent = Agent(name="echo", model=EchoModel(deltas=10, delay=0.1))
    server_settings = ServerSettings(**settings)  # type: ignore[arg-type]
    app = create_app(Sluicegate(agents=[agent]), server_settings)
    with serve_in_thread(app, http=protocol_class(server_settings, http)) as url:  # type: ignore[arg-type]
        yield int(url.rsplit(":", 1)[1])


@dataclass
class Stalled:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    opened: float


async def open_stalled(port: int, payload: bytes) -> Stalled:
    # Taken before connecting: the server's clock for the socket starts at its accept, which a
    # busy loop here may record late; from before the connect, "closed early" cannot be a
    # measuring artefact.
    opened = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    if payload:
        writer.write(payload)
        await writer.drain()
    return Stalled(reader, writer, opened)


async def outcome(conn: Stalled, within: float) -> tuple[bytes, float | None]:
    """What the server sent, and how long after opening it closed (None: still open)."""
    data = b""
    try:
        async with asyncio.timeout(within):
            while chunk := await conn.reader.read(65536):
                data += chunk
    except TimeoutError:
        return data, None
    except ConnectionError:  # reset by the server, or our own write failed after its close
        pass
    return data, time.monotonic() - conn.opened


async def timed_get(port: int, path: str = "/api") -> tuple[int, float, dict[str, object]]:
    """One request on a new connection: status, seconds, JSON body."""
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=5) as client:
        response = await client.get(f"http://127.0.0.1:{port}{path}")
    return response.status_code, time.monotonic() - started, response.json()


async def test_stalled_requests_are_closed_while_others_are_answered(http: str) -> None:
    timeout = 1.5
    with serve(http, request_read_timeout=timeout, max_connections=2 * STALLED) as port:
        stalled = [
            await open_stalled(port, PARTIAL_BODY if i % 10 == 0 else PARTIAL_HEADERS) for i in range(STALLED)
        ]
        for _ in range(5):
            status, seconds, body = await timed_get(port)
            assert status == 200 and body["name"] == "sluicegate"
            assert seconds < 1.0, f"a normal request took {seconds:.2f} s beside {STALLED} stalled sockets"
        results = await asyncio.gather(*(outcome(conn, timeout + 5) for conn in stalled))
        for conn in stalled:
            conn.writer.close()
    still_open = sum(1 for _, closed in results if closed is None)
    assert still_open == 0, f"{still_open} stalled sockets were never closed"
    early = [closed for _, closed in results if closed is not None and closed < timeout - 0.1]
    assert not early, f"{len(early)} closed before the deadline"
    # Partial headers and partial bodies alike are told why before the close.
    assert all(data.startswith(b"HTTP/1.1 408 ") for data, _ in results)
    assert b"request_read_timeout" in results[0][0] and b"nosniff" in results[0][0]


async def test_a_trickle_does_not_extend_the_deadline(http: str) -> None:
    with serve(http, request_read_timeout=1.0) as port:
        conn = await open_stalled(port, b"GET /api HTTP/1.1\r\nHost: x\r\n")
        reading = asyncio.create_task(outcome(conn, 4))
        for _ in range(40):  # one header byte every 0.1 s, until the server closes
            try:
                conn.writer.write(b"X")
                await conn.writer.drain()
            except ConnectionError:
                break
            await asyncio.sleep(0.1)
            if reading.done():
                break
        data, closed_at = await reading
        conn.writer.close()
    assert data.startswith(b"HTTP/1.1 408 ")
    assert closed_at is not None and closed_at < 2.0, closed_at


async def test_the_deadline_does_not_cut_an_answer_or_a_timely_body(http: str) -> None:
    with serve(http, request_read_timeout=0.5) as port:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            started = time.monotonic()
            stream = await client.post("/api/agents/echo/stream", json={"messages": "one two three"})
            assert stream.status_code == 200 and stream.text.rstrip().endswith("data: [DONE]")
            assert time.monotonic() - started > 0.9  # the answer outlived the read deadline
            # The same keep-alive connection carries the next request.
            assert (await client.get("/api")).status_code == 200

        # A body in two parts, inside the deadline: answered.
        conn = await open_stalled(port, PARTIAL_BODY.replace(b"content-length: 200", b"content-length: 18"))
        await asyncio.sleep(0.2)
        conn.writer.write(b'"}')
        data, _ = await outcome(conn, 5)
        conn.writer.close()
        assert data.startswith(b"HTTP/1.1 200 "), data[:200]

        # Two pipelined requests in one write: both answered.
        get = b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n"
        conn = await open_stalled(port, get + get)
        data, _ = await outcome(conn, 5)
        conn.writer.close()
        assert data.count(b"HTTP/1.1 200 ") == 2 and b"408" not in data, data

        # A connection that never sends anything is closed without an answer.
        idle = await open_stalled(port, b"")
        data, closed_at = await outcome(idle, 3)
        idle.writer.close()
        assert data == b"" and closed_at is not None and closed_at >= 0.4


async def test_connections_beyond_the_cap_get_503(http: str) -> None:
    cap = 20
    with serve(http, request_read_timeout=30, max_connections=cap) as port:
        held = [await open_stalled(port, b"") for _ in range(cap)]
        await asyncio.sleep(0.2)  # let the server register them
        status, seconds, body = await timed_get(port)
        assert status == 503 and seconds < 1.0
        assert body == {
            "error": f"too many open connections ({cap}, the limit of this server process); retry shortly"
        }
        # Refused before anything is read: a client that sends nothing gets it too.
        silent = await open_stalled(port, b"")
        data, closed_at = await outcome(silent, 3)
        silent.writer.close()
        assert data.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1" in data and closed_at is not None
        for conn in held[:5]:
            conn.writer.close()
        await asyncio.sleep(0.2)
        status, _, _ = await timed_get(port)
        assert status == 200
        for conn in held[5:]:
            conn.writer.close()


@contextmanager
def sluicegate_serve(log: Path, *options: str, files: int | None = None) -> Iterator[int]:
    """`sluicegate serve` on the example app in a subprocess (its open-file limit lowered to
    `files`); yields its port once it accepts connections."""

    def limit_files() -> None:
        if files is not None:
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(files, soft), hard))

    port = free_port()
    command = [sys.executable, "-m", "sluicegate", "serve", str(EXAMPLE), "--port", str(port), *options]
    with log.open("wb") as out:
        server = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=limit_files,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, log.read_text()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        time.sleep(0.5)  # the probe's connection is gone before the stalled ones count
        yield port
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


@pytest.fixture
def served_with_1024_files(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """The example app with a 5 s read deadline and the default cap, limited to 1,024 files."""
    log = tmp_path / "serve.log"
    with sluicegate_serve(log, "--request-read-timeout", "5", files=1024) as port:
        yield port, log


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[int]:
    with sluicegate_serve(
        tmp_path / "serve.log", "--workers", "2", "--max-connections", "5", "--request-read-timeout", "8"
    ) as port:
        yield port


async def test_every_worker_process_applies_the_options(two_workers: int) -> None:
    """The options reach uvicorn's worker processes: each holds at most 5 connections (10 in
    all), refuses the rest with 503, and closes stalled ones after 8 s (long enough that the
    rounds below finish on a loaded machine before the first held connection expires)."""
    held: list[Stalled] = []
    started = time.monotonic()
    for _ in range(10):  # a few rounds: which worker accepts a connection is the kernel's choice
        batch = [await open_stalled(two_workers, PARTIAL_HEADERS) for _ in range(12 - len(held))]
        results = await asyncio.gather(*(outcome(conn, 0.3) for conn in batch))
        for conn, (data, closed) in zip(batch, results, strict=True):
            if closed is None:
                held.append(conn)
            else:
                assert data.startswith(b"HTTP/1.1 503 "), data
        if len(held) >= 10:
            break
    assert len(held) == 10
    for _ in range(3):
        status, seconds, _ = await timed_get(two_workers)
        assert status == 503 and seconds < 1.0
    assert time.monotonic() - started < 7, "the rounds took too long to test the deadline"
    expired = await asyncio.gather(*(outcome(conn, 9) for conn in held))
    assert all(data.startswith(b"HTTP/1.1 408 ") for data, _ in expired)
    assert all(closed is not None and 7.9 < closed < 10 for _, closed in expired)
    status, _, _ = await timed_get(two_workers)
    assert status == 200


async def test_sluicegate_serve_under_a_1024_descriptor_limit(
    served_with_1024_files: tuple[int, Path],
) -> None:
    """The finding as reported: `sluicegate serve` with the common limit of 1,024 open files and
    1,100 stalled sockets. Before, the process ran out of descriptors and every other request
    hung; now the cap (512 here: half the limit) answers 503 at once while the stalled sockets
    hold it, and the read deadline frees it."""
    port, log = served_with_1024_files
    started = time.monotonic()
    stalled = [
        await open_stalled(port, PARTIAL_BODY if i % 10 == 0 else PARTIAL_HEADERS) for i in range(STALLED)
    ]
    opening = time.monotonic() - started
    # Those over the cap are refused (a 503, or a plain close when refusals pile up).
    refused = await asyncio.gather(*(outcome(conn, 1.5) for conn in stalled))
    held = [conn for conn, (_, closed) in zip(stalled, refused, strict=True) if closed is None]
    assert len(held) == 512, f"{len(held)} held; {STALLED} sockets opened in {opening:.2f} s"
    assert all(data == b"" or data.startswith(b"HTTP/1.1 503 ") for data, closed in refused if closed)
    for _ in range(3):
        status, seconds, body = await timed_get(port)
        assert status == 503 and "too many open connections" in str(body["error"])
        assert seconds < 1.0, f"a request waited {seconds:.2f} s for its 503"
    expired = await asyncio.gather(*(outcome(conn, 7) for conn in held))
    assert all(data.startswith(b"HTTP/1.1 408 ") for data, _ in expired)
    status, seconds, _ = await timed_get(port)
    assert status == 200 and seconds < 1.0
    for conn in stalled:
        conn.writer.close()
    text = log.read_text()
    assert "Too many open files" not in text
    assert text.count("refusing connections with 503") == 1  # once, not once per refusal


async def test_a_websocket_outlives_the_read_deadline(http: str) -> None:
    """After an upgrade the connection is the WebSocket protocol's: no HTTP deadline closes it."""
    from websockets.asyncio.client import connect

    app = FastAPI()

    @app.websocket("/echo")
    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        while True:
            await websocket.send_text(await websocket.receive_text())

    settings = ServerSettings(request_read_timeout=0.3)
    with serve_in_thread(app, http=protocol_class(settings, http)) as url:  # type: ignore[arg-type]
        async with connect(url.replace("http", "ws") + "/echo") as websocket:
            await asyncio.sleep(1.0)
            await websocket.send("still here")
            assert await asyncio.wait_for(websocket.recv(), 2) == "still here"
