"""What a tool call through `MCPClient` costs over the same call made with the `mcp` SDK.

(Not `benchmarks/mcp.py`: run as a script, a file of that name would shadow the `mcp` SDK.)

`mcp-server-time` (a dev dependency) runs over stdio three times: once behind the SDK's
`ClientSession` (initialize handshake, `call_tool`), once behind the SDK's `Client` (which
`MCPClient` builds on: protocol discovery, the modern protocol when the server speaks it), once
behind `MCPClient` (the tool sluicegate's agent calls: input validation, the per-call timeout,
the result turned into what the model reads), both as a call outside a run and as a call in a
run (`in run`: a tool call the server may ask a question during, see `mcp/elicitation.py`).
Each makes `--calls` calls of
`get_current_time`, in alternating rounds so machine noise falls on all alike, and prints the
median wall time and the difference of medians, then the CPU time this process spent per call
(`time.process_time` over each round: what sluicegate itself adds, which the other processes
of a loaded machine do not blur the way they blur wall time).

    uv run python benchmarks/mcp_client.py [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from sluicegate.mcp import MCPClient
from sluicegate.tools import ToolContext

SERVER = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server_time"])
ARGS = {"timezone": "Europe/Paris"}
ROUND = 20


async def timed(
    call: Callable[[], Awaitable[Any]], samples: list[float], count: int, cpu: list[float] | None = None
) -> None:
    spent = time.process_time()
    for _ in range(count):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    if cpu is not None:
        cpu.append((time.process_time() - spent) / count)


async def main(calls: int) -> None:
    samples: dict[str, list[float]] = {"ClientSession": [], "Client": [], "MCPClient": [], "in run": []}
    cpu: dict[str, list[float]] = {name: [] for name in samples}
    async with (
        stdio_client(SERVER) as (read, write),
        ClientSession(read, write) as session,
        Client(SERVER) as client,
        MCPClient(servers={"time": {"command": SERVER.command, "args": SERVER.args}}) as mcp,
    ):
        await session.initialize()
        tool = (await mcp.list_tools())["time_get_current_time"]
        context = ToolContext(tool_call_id="bench")
        in_run = ToolContext(tool_call_id="bench", idempotency_key="run:bench")

        async def through_sluicegate() -> Any:
            return await tool.execute(tool.validate(ARGS), context)

        async def in_a_run() -> Any:
            return await tool.execute(tool.validate(ARGS), in_run)

        ways: dict[str, Callable[[], Awaitable[Any]]] = {
            "ClientSession": lambda: session.call_tool("get_current_time", ARGS),
            "Client": lambda: client.call_tool("get_current_time", ARGS),
            "MCPClient": through_sluicegate,
            "in run": in_a_run,
        }
        for call in ways.values():  # warm up
            await timed(call, [], 10)
        for _ in range(-(-calls // ROUND)):
            for name, call in ways.items():
                await timed(call, samples[name], ROUND, cpu[name])
    medians = {name: statistics.median(values[:calls]) * 1000 for name, values in samples.items()}
    for name, value in medians.items():
        print(f"{name:>13}: median {value:.3f} ms per call ({calls} calls)")
    print(f"MCPClient over ClientSession: {medians['MCPClient'] - medians['ClientSession']:+.3f} ms")
    print(f"MCPClient over Client:        {medians['MCPClient'] - medians['Client']:+.3f} ms")
    print(f"in run over ClientSession:    {medians['in run'] - medians['ClientSession']:+.3f} ms")
    spent = {name: statistics.median(values) * 1000 for name, values in cpu.items()}
    for name, value in spent.items():
        over = value - spent["ClientSession"]
        print(f"{name:>13}: CPU {value:.3f} ms per call in this process ({over:+.3f} over ClientSession)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    asyncio.run(main(parser.parse_args().calls))
