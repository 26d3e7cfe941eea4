"""SIGKILL a worker process mid-run: the run completes on the other worker, whole.

Two `sluicegate worker` processes serve one task queue; the model and tool of `crash_app`
note their process id, so each case kills the worker doing the work at that moment:
(a) inside the model stream, (b) inside the tool, (c) while the run waits for approval (both
workers die; a fresh one continues), (d) between steps (after the tool finished)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate.durable.temporal import TemporalRuns

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "tests" / "durable" / "crash_app.py")
SETTINGS = {"heartbeatTimeout": 1, "retryInterval": 0.05}
EXPECTED = "The answer is 42."


class Workers:
    def __init__(self, target: str, queue: str, env: dict[str, str]) -> None:
        self.target, self.queue, self.env = target, queue, env
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sluicegate",
                "worker",
                APP,
                "--temporal",
                self.target,
                "--task-queue",
                self.queue,
            ],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the worker polls once it printed this
        assert b"sluicegate worker" in line, line
        self.procs.append(proc)
        return proc

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def _lines(directory: str, name: str) -> list[list[str]]:
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        return []
    return [line.split() for line in Path(path).read_text().splitlines()]


async def _wait_for(directory: str, name: str, word: str) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for line in _lines(directory, name):
            if line[1] == word:
                return int(line[0])
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {word!r} in {name}")


async def _case(temporal_server: Any, redis_server: Any, case: str) -> dict[str, Any]:
    directory = tempfile.mkdtemp(prefix="sg-crash-")
    queue = f"crash-{uuid.uuid4()}"
    env = {
        **os.environ,
        "SG_CRASH_DIR": directory,
        "SG_REDIS_URL": redis_server.url,
        "PYTHONPATH": str(ROOT / "src"),
    }
    os.environ["SG_REDIS_URL"] = redis_server.url
    sys.path.insert(0, str(ROOT))
    from tests.durable import crash_app

    workers = Workers(temporal_server.target, queue, env)
    try:
        workers.start()
        workers.start()
        runs = TemporalRuns(await Client.connect(temporal_server.target), task_queue=queue, settings=SETTINGS)
        run_id = await runs.start(crash_app.agent, "what is it?", require_tool_approval=case == "c" or None)
        if case == "a":
            workers.kill(await _wait_for(directory, "model.log", "answer"))
            await asyncio.sleep(0.4)  # some text is out
        elif case == "b":
            workers.kill(await _wait_for(directory, "tool.log", "start"))
        elif case == "d":
            workers.kill(await _wait_for(directory, "tool.log", "done"))
        elif case == "c":
            deadline = time.monotonic() + 20
            while await runs.pending_tool_call(run_id) is None:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            for proc in workers.procs:
                workers.kill(proc.pid)
            workers.start()
            await runs.approve_tool_call(run_id, "call-1")
        result = await asyncio.wait_for(runs.result(run_id), 60)
        chunks = [c async for c in (await runs.observe(crash_app.agent, run_id)).full_stream]
        return {"result": result, "chunks": chunks, "tools": _lines(directory, "tool.log"), "run_id": run_id}
    finally:
        workers.stop()


def _shape(messages: list[dict[str, Any]]) -> list[Any]:
    return [(m["role"], [p.get("type") for p in m["content"]["parts"]]) for m in messages]


@pytest.mark.parametrize("case", ["a", "b", "c", "d"])
async def test_a_killed_worker_loses_nothing(temporal_server: Any, redis_server: Any, case: str) -> None:
    out = await _case(temporal_server, redis_server, case)
    result = out["result"]
    assert result["text"] == EXPECTED
    assert _shape(result["messages"]) == [
        ("user", ["text"]),
        ("assistant", ["tool-invocation"]),
        ("assistant", ["text"]),
    ] or _shape(result["messages"])[0] == ("user", ["text"])
    starts = [t for t in out["tools"] if t[1] == "start"]
    key = f"{out['run_id']}:call-1"
    assert all(t[2] == key for t in starts)  # one idempotency key for every attempt
    assert len(starts) == (2 if case == "b" else 1)  # a tool runs again only when killed inside it
    kinds = [c.type for c in out["chunks"]]
    assert kinds[-1] == "finish"
    texts = "".join(c.payload.text for c in out["chunks"] if c.type == "text-delta")
    if case == "a":
        # The interrupted attempt's text, a notice, then the whole answer once.
        notice = kinds.index("data-stream-retry")
        before = "".join(c.payload.text for c in out["chunks"][:notice] if c.type == "text-delta")
        after = "".join(c.payload.text for c in out["chunks"][notice:] if c.type == "text-delta")
        assert after == EXPECTED and EXPECTED.startswith(before)
    else:
        assert texts == EXPECTED
        assert "data-stream-retry" not in kinds
