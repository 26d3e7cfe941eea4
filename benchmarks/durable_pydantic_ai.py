"""pydantic-ai's `TemporalAgent` on the same kind of run as `durable.py`, for comparison.

A `FunctionModel` asks for a no-op tool `--steps` times and then answers with four text
deltas; the agent runs in process (`agent.run`) and on the Temporal CLI's dev server through
`TemporalAgent` (model requests and tool calls as activities, the worker in this process), in
alternated rounds. It prints per-step overhead ((durable - in process) / model calls, medians),
time to first text (pydantic-ai streams on Temporal only into an `event_stream_handler` that
runs inside the model activity, on the worker: the time is `start_workflow` to that handler's
first text delta, a client would see it later), the activities one run records, and runs/s with
two worker processes.

pydantic-ai is not a dependency of sluicegate (its pins need not agree with our lock), so it
runs from its own virtualenv, using the temporal CLI the project's dev dependencies installed:

    python3 -m venv /tmp/pai-venv && /tmp/pai-venv/bin/pip install 'pydantic-ai-slim[temporal]'
    PATH=$PWD/.venv/bin:$PATH /tmp/pai-venv/bin/python benchmarks/durable_pydantic_ai.py \\
        [--steps 5] [--repeat 7] [--runs 40]

Measured with pydantic-ai-slim 2.68.0 and temporalio 1.35.0 (the version our lock has).
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
import warnings
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path

try:
    from pydantic_ai import Agent
except ImportError:  # not in the project's environment (`run.py bench`): see the docstring
    print("durable_pydantic_ai.py: pydantic-ai is not installed here; see its docstring", file=sys.stderr)
    raise SystemExit(0) from None
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, TemporalAgent
from pydantic_ai.messages import (
    AgentStreamEvent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.tools import RunContext
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

ROOT = Path(__file__).resolve().parents[1]
STEPS = int(os.environ.get("SG_BENCH_STEPS", "5"))
ANSWER = ("done ", "in ", "the ", "end")
FIRST_TEXT: dict[str, float] = {}
"""Workflow id -> when the event handler saw its first text delta (worker in this process)."""


def _done(messages: list[ModelMessage]) -> int:
    return sum(
        1 for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
    )


def make_agent(name: str, steps: int) -> Agent[None, str]:
    """Asks for `noop` until the prompt holds `steps` results, then answers."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        n = _done(messages)
        if n >= steps:
            return ModelResponse(parts=[TextPart("".join(ANSWER))])
        return ModelResponse(parts=[ToolCallPart("noop", json.dumps({"n": n}), tool_call_id=f"c{n}")])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        n = _done(messages)
        if n >= steps:
            for piece in ANSWER:
                yield piece
            return
        yield {0: DeltaToolCall("noop", json.dumps({"n": n}), tool_call_id=f"c{n}")}

    agent: Agent[None, str] = Agent(FunctionModel(respond, stream_function=stream), name=name)

    @agent.tool_plain
    async def noop(n: int) -> int:
        """Does nothing."""
        return n

    return agent


async def _first_text(ctx: RunContext[None], events: AsyncIterable[AgentStreamEvent]) -> None:
    key = activity.info().workflow_id or "" if activity.in_activity() else "local"
    async for event in events:
        if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            FIRST_TEXT.setdefault(key, time.perf_counter())


plain = make_agent("bench", STEPS)
answerer = make_agent("answer", 0)
"""Answers at once: the time to its first text is the stream's, not the steps'."""
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # TemporalAgent is deprecated in favour of TemporalDurability
    durable = TemporalAgent(plain)
    streaming = TemporalAgent(make_agent("stream", 0), event_stream_handler=_first_text)


@workflow.defn(name="pai-bench")
class BenchWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await durable.run(prompt)).output


@workflow.defn(name="pai-stream")
class StreamWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await streaming.run(prompt)).output


def _worker(client: Client, queue: str) -> Worker:
    return Worker(
        client,
        task_queue=queue,
        workflows=[BenchWorkflow, StreamWorkflow],
        plugins=[AgentPlugin(durable), AgentPlugin(streaming)],
        workflow_runner=UnsandboxedWorkflowRunner(),  # as sluicegate's worker: same footing
    )


async def _in_process() -> float:
    start = time.perf_counter()
    result = await plain.run("go")
    assert result.output == "".join(ANSWER), result.output
    return time.perf_counter() - start


async def _first_text_in_process(agent: Agent[None, str]) -> float:
    FIRST_TEXT.pop("local", None)
    start = time.perf_counter()
    await agent.run("go", event_stream_handler=_first_text)
    return FIRST_TEXT["local"] - start


async def main(steps: int, repeat: int, runs_count: int) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.durable.temporal_server import DevServer

    server = DevServer()
    try:
        client = await Client.connect(server.target, plugins=[PydanticAIPlugin()])
        queue = f"pai-{uuid.uuid4()}"
        async with _worker(client, queue):

            async def run_durable() -> tuple[float, str]:
                run_id = str(uuid.uuid4())
                start = time.perf_counter()
                out = await client.execute_workflow(BenchWorkflow.run, "go", id=run_id, task_queue=queue)
                assert out == "".join(ANSWER), out
                return time.perf_counter() - start, run_id

            async def first_text_durable() -> float:
                run_id = str(uuid.uuid4())
                start = time.perf_counter()
                await client.execute_workflow(StreamWorkflow.run, "go", id=run_id, task_queue=queue)
                return FIRST_TEXT[run_id] - start

            await run_durable()
            await _in_process()
            local, remote, local_first, remote_first = [], [], [], []
            run_id = ""
            for _ in range(repeat):
                local.append(await _in_process())
                elapsed, run_id = await run_durable()
                remote.append(elapsed)
                local_first.append(await _first_text_in_process(answerer))
                remote_first.append(await first_text_durable())
            history = await client.get_workflow_handle(run_id).fetch_history()
            activities = Counter(
                e.activity_task_scheduled_event_attributes.activity_type.name
                for e in history.events
                if e.HasField("activity_task_scheduled_event_attributes")
            )
        local_ms, remote_ms = statistics.median(local) * 1000, statistics.median(remote) * 1000
        print(f"pydantic-ai TemporalAgent, {steps} tool steps + 1 answer ({steps + 1} model calls)")
        print(f"activities per run: {sum(activities.values())} ({dict(activities)})")
        print(f"in process: {local_ms:8.2f} ms/run")
        print(f"durable:    {remote_ms:8.2f} ms/run")
        print(f"per-step overhead: {(remote_ms - local_ms) / (steps + 1):.2f} ms")
        first_local = statistics.median(local_first) * 1000
        first_remote = statistics.median(remote_first) * 1000
        print(
            f"time to first text (in the worker's event handler): in process "
            f"{first_local:.2f} ms, durable {first_remote:.2f} ms (+{first_remote - first_local:.2f} ms)"
        )
        print(f"runs/s with two worker processes: {await _throughput(server.target, runs_count):.1f}")
    finally:
        server.stop()


async def _throughput(target: str, count: int) -> float:
    queue = f"pai-{uuid.uuid4()}"
    workers = _start_workers(target, queue)
    try:
        client = await Client.connect(target, plugins=[PydanticAIPlugin()])
        await client.execute_workflow(BenchWorkflow.run, "go", id=str(uuid.uuid4()), task_queue=queue)
        start = time.perf_counter()
        handles = await asyncio.gather(
            *(
                client.start_workflow(BenchWorkflow.run, "go", id=str(uuid.uuid4()), task_queue=queue)
                for _ in range(count)
            )
        )
        await asyncio.gather(*(h.result() for h in handles))
        return count / (time.perf_counter() - start)
    finally:
        _stop_workers(workers)


def _start_workers(target: str, queue: str) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "SG_BENCH_STEPS": str(STEPS)}
    command = [sys.executable, __file__, "--worker", target, queue]
    workers = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE) for _ in range(2)]
    for proc in workers:
        assert proc.stdout is not None
        proc.stdout.readline()
    return workers


def _stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for proc in workers:
        proc.terminate()
    for proc in workers:
        proc.wait()


async def _serve(target: str, queue: str) -> None:
    import signal

    client = await Client.connect(target, plugins=[PydanticAIPlugin()])
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with _worker(client, queue):
        print("worker ready", flush=True)
        await stop.wait()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        asyncio.run(_serve(sys.argv[2], sys.argv[3]))
        sys.stdout.flush()
        os._exit(0)  # the Temporal SDK's threads can abort a finalizing interpreter (see worker.py)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--runs", type=int, default=40)
    arguments = parser.parse_args()
    os.environ["SG_BENCH_STEPS"] = str(arguments.steps)
    STEPS = arguments.steps
    plain = make_agent("bench", STEPS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        durable = TemporalAgent(plain)
    asyncio.run(main(arguments.steps, arguments.repeat, arguments.runs))
