"""Streamed requests per second and latency of `sluicegate serve` at concurrency 50.

Starts `sluicegate serve benchmarks/server_app.py` (one uvicorn worker, a mock model answering
with 50 text deltas), sends `--requests` `POST /api/agents/bench/stream` requests from
`--concurrency` concurrent clients, reads every stream to `data: [DONE]`, and prints requests
per second and p50/p99 latency (request start to the end of the stream). `--url URL --agent ID`
measures another server (for instance Mastra's, see docs/server.md) with the same client.

    uv run python benchmarks/server.py [--requests 2000] [--concurrency 50] [--workers 1]

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

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


async def one_stream(client: httpx.AsyncClient, path: str, body: dict[str, object]) -> tuple[float, int]:
    start = time.perf_counter()
    deltas = 0
    async with client.stream("POST", path, json=body) as response:
        response.raise_for_status()
        buffer = b""
        async for data in response.aiter_bytes():
            buffer += data
            deltas += data.count(b'"type":"text-delta"')
        if not buffer.rstrip().endswith(b"data: [DONE]"):
            raise RuntimeError("stream did not end with [DONE]")
    return time.perf_counter() - start, deltas


async def load(url: str, agent: str, requests: int, concurrency: int) -> tuple[float, list[float], int]:
    path = f"/api/agents/{agent}/stream"
    body: dict[str, object] = {"messages": [{"role": "user", "content": "benchmark"}]}
    latencies: list[float] = []
    deltas = 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(requests):
        queue.put_nowait(i)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
        for _ in range(min(concurrency, 20)):  # warm up connections and code paths
            await one_stream(client, path, body)

        async def worker() -> None:
            nonlocal deltas
            while True:
                try:
                    queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                latency, count = await one_stream(client, path, body)
                latencies.append(latency)
                deltas += count

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return elapsed, latencies, deltas


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


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--url", help="measure this server instead of starting sluicegate")
    parser.add_argument("--agent", default="bench")
    args = parser.parse_args()
    if args.url:
        await wait_ready(args.url)
        report(args.url, *await load(args.url, args.agent, args.requests, args.concurrency))
        return
    port = free_port()
    server = start_server(port, args.workers)
    try:
        url = f"http://127.0.0.1:{port}"
        await wait_ready(url)
        plural = "s" if args.workers > 1 else ""
        name = f"sluicegate serve ({args.workers} worker{plural}), concurrency {args.concurrency}"
        before = cpu_seconds(server.pid)
        elapsed, latencies, deltas = await load(url, args.agent, args.requests, args.concurrency)
        used = cpu_seconds(server.pid) - before
        report(name, elapsed, latencies, deltas)
        if args.workers == 1:
            served = len(latencies) + min(args.concurrency, 20)
            print(f"  server CPU  {1000 * used / served:.2f} ms per streamed request")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    asyncio.run(main())
