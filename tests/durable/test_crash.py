"""SIGKILL a worker process mid-run: the run completes on another worker, whole.

`sluicegate worker` processes serve one task queue (two at the start of each case); the model
and tool of `crash_app` note their process id, so each case kills the worker doing the work at
that moment: (a) inside the model stream, (b) inside the tool, (c) while the run waits for
approval (every worker dies; a fresh one continues), (d) between steps (after the tool
finished), (e) right after the cost guard's reservation committed, before its activity reported
it (the retried reservation must not charge again). Each case uses its own thread and
resource, so its stored messages and budget are its own."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate.durable.temporal import TemporalRuns
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.storage import SQLiteStore

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "tests" / "durable" / "crash_app.py")
WORKER = [sys.executable, "-m", "sluicegate", "worker", APP]
SETTINGS = {"heartbeatTimeout": 1, "retryInterval": 0.05, "storageTimeout": 3, "workflowTaskTimeout": 3}
"""A storage activity of a killed worker is retried after `storageTimeout` (it has no heartbeat),
a workflow task it held after `workflowTaskTimeout` (Temporal's default is 10 s)."""
EXPECTED = "The answer is 42."
TOKENS = (1 + 1) + (2 + 5)
"""The usage the crash app's model reports for its two calls (a dollar a token)."""


class Pool:
    """The worker processes of this module, on one task queue."""

    def __init__(self, target: str, directory: str, redis_url: str) -> None:
        self.target = target
        self.directory = directory
        self.queue = f"crash-{uuid.uuid4()}"
        self.env = {
            **os.environ,
            "SG_CRASH_DIR": directory,
            "SG_REDIS_URL": redis_url,
            "PYTHONPATH": str(ROOT / "src"),
        }
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ready: set[int] = set()
        self.started = 0

    def spawn(self) -> subprocess.Popen[bytes]:
        self.started += 1
        with open(os.path.join(self.directory, f"worker-{self.started}.err"), "wb") as err:
            proc = subprocess.Popen(
                [*WORKER, "--temporal", self.target, "--task-queue", self.queue, "--sticky-timeout", "1"],
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=ROOT,
            )
        self.procs.append(proc)
        return proc

    def live(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in self.procs if p.poll() is None]

    def fill(self, count: int = 2) -> None:
        """At least `count` workers polling (replacements started earlier count)."""
        for _ in range(count - len(self.live())):
            self.spawn()
        for proc in self.live():
            if proc.pid not in self.ready:
                assert proc.stdout is not None
                line = proc.stdout.readline()  # printed once the worker polls
                assert b"sluicegate worker" in line, line
                self.ready.add(proc.pid)

    def kill(self, pid: int, *, replace: bool = True) -> None:
        """SIGKILL one worker; its replacement starts at once (it is waited for by `fill`)."""
        os.kill(pid, signal.SIGKILL)
        for proc in self.procs:
            if proc.pid == pid:
                proc.wait()
        if replace:
            self.spawn()

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def pool(temporal_server: Any, redis_server: Any) -> Iterator[Pool]:
    # Kept after the run (the workers' logs say why a case failed); in the system temp dir.
    workers = Pool(temporal_server.target, tempfile.mkdtemp(prefix="sluicegate-crash-"), redis_server.url)
    try:
        workers.fill()
        yield workers
    finally:
        workers.stop()


def _flag(directory: str, name: str) -> None:
    Path(directory, name).touch()


def _lines(directory: str, name: str, run_id: str) -> list[list[str]]:
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        return []
    lines = [line.split() for line in Path(path).read_text().splitlines()]
    return [line for line in lines if line[2] == run_id]


async def _wait_for(directory: str, name: str, word: str, run_id: str) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in _lines(directory, name, run_id):
            if line[1] == word:
                return int(line[0])
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {word!r} in {name}")


async def _between_steps(runs: TemporalRuns, run_id: str) -> int:
    """Once the tool's result is in the run's history (its activity completed, so it is never
    run again), the worker that last ran the workflow (`pid@host`, the SDK's identity)."""
    handle = runs.client.get_workflow_handle(run_id)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        events = (await handle.fetch_history()).events
        scheduled = {
            e.event_id
            for e in events
            if e.HasField("activity_task_scheduled_event_attributes")
            and ".tool." in e.activity_task_scheduled_event_attributes.activity_type.name
        }
        if any(
            e.HasField("activity_task_completed_event_attributes")
            and e.activity_task_completed_event_attributes.scheduled_event_id in scheduled
            for e in events
        ):
            identities = [
                e.workflow_task_completed_event_attributes.identity
                for e in events
                if e.HasField("workflow_task_completed_event_attributes")
            ]
            return int(identities[-1].split("@")[0])
        await asyncio.sleep(0.01)
    raise AssertionError("the tool's activity never completed")


def _shape(messages: list[dict[str, Any]]) -> list[Any]:
    """Messages without their ids and times: roles, parts, texts, tool calls and results."""
    out = []
    for m in messages:
        parts = []
        for p in m["content"]["parts"]:
            call = p.get("toolInvocation") or {}
            parts.append(
                (p.get("type"), p.get("text"), call.get("toolName"), call.get("args"), call.get("result"))
            )
        out.append((m["role"], parts))
    return out


_REFERENCE: list[Any] = []


async def _uninterrupted(monkeypatch: pytest.MonkeyPatch, crash_app: Any) -> list[Any]:
    """The stored messages of the same conversation in one process, nothing killed."""
    if not _REFERENCE:
        from sluicegate import Agent
        from sluicegate.memory import Memory

        monkeypatch.setenv("SG_TOOL_SECONDS", "0")
        storage = SQLiteStore(":memory:")
        agent = Agent(
            "crashy", model=crash_app.CrashModel(), tools=[crash_app.lookup], memory=Memory(storage=storage)
        )
        await agent.generate("what is it?", memory={"thread": "t", "resource": "u"})
        _REFERENCE.extend(_shape([m.to_dict() for m in await storage.list_messages("t")]))
        await storage.close()
    return _REFERENCE


async def _case(pool: Pool, crash_app: Any, case: str) -> dict[str, Any]:
    pool.fill()
    directory = pool.directory
    runs = TemporalRuns(await Client.connect(pool.target), task_queue=pool.queue, settings=SETTINGS)
    thread, resource = f"t-{case}-{uuid.uuid4()}", f"u-{case}-{uuid.uuid4()}"
    if case == "e":
        _flag(directory, f"kill-after-reserve-resource:{resource}")
    run_id = await runs.start(
        crash_app.agent,
        "what is it?",
        require_tool_approval=case == "c" or None,
        memory={"thread": thread, "resource": resource},
    )
    if case == "a":
        pid = await _wait_for(directory, "model.log", "answer", run_id)
        await asyncio.sleep(0.3)  # some of the answer is out
        pool.kill(pid)
    elif case == "b":
        pool.kill(await _wait_for(directory, "tool.log", "start", run_id))
    elif case == "d":
        pool.kill(await _between_steps(runs, run_id))
    elif case == "c":
        deadline = time.monotonic() + 30
        while await runs.pending_tool_call(run_id) is None:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        for proc in pool.live():
            pool.kill(proc.pid, replace=False)
        pool.fill(1)  # a fresh worker: it replays the waiting run when the approval arrives
        owner = RequestContext({RESOURCE_ID_KEY: resource})
        await runs.approve_tool_call(run_id, "call-1", request_context=owner)
    result = await asyncio.wait_for(runs.result(run_id), 60)
    described = await runs.client.get_workflow_handle(run_id).describe()
    assert described.raw_description.execution_config.default_workflow_task_timeout.seconds == 3
    owner = RequestContext({RESOURCE_ID_KEY: resource})
    observed = await runs.observe(crash_app.agent, run_id, request_context=owner)
    chunks = [c async for c in observed.full_stream]
    storage = SQLiteStore(os.path.join(directory, "memory.db"))
    try:
        stored = await storage.list_messages(thread)
        spent = await storage.total(f"resource:{resource}", None)
    finally:
        await storage.close()
    return {
        "reserved": _lines(directory, "store.log", run_id),
        "result": result,
        "chunks": chunks,
        "tools": _lines(directory, "tool.log", run_id),
        "run_id": run_id,
        "stored": stored,
        "spent": spent,
    }


@pytest.mark.parametrize("case", ["a", "b", "c", "d", "e"])
async def test_a_killed_worker_loses_nothing(pool: Pool, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SG_REDIS_URL", pool.env["SG_REDIS_URL"])  # before crash_app is imported here
    monkeypatch.setenv("SG_CRASH_DIR", pool.directory)
    from tests.durable import crash_app

    reference = await _uninterrupted(monkeypatch, crash_app)
    monkeypatch.delenv("SG_TOOL_SECONDS", raising=False)
    out = await _case(pool, crash_app, case)
    result = out["result"]
    assert result["text"] == EXPECTED, (
        result["finishReason"],
        result["error"],
        result["tripwire"],
        pool.directory,
    )
    # The same messages as the uninterrupted run, in the result and in storage, none twice.
    assert _shape(result["messages"]) == reference
    stored = [m.to_dict() for m in out["stored"]]
    assert _shape(stored) == reference
    assert len({m["id"] for m in stored}) == len(stored)
    # The budget was charged once per model call, exactly: the two calls' tokens. In case (e)
    # the first reservation was committed by a worker that died before reporting it; its retry
    # on the other worker answered that reservation (one idempotency key) instead of adding
    # another (about 415 more at these prices), which was then settled to the call's cost.
    assert out["spent"] == pytest.approx(TOKENS), out["spent"]
    if case == "e":
        assert len(out["reserved"]) == 1, out["reserved"]  # the kill happened, once
        assert out["reserved"][0][4].startswith(f"{out['run_id']}/"), out["reserved"]
    starts = [t for t in out["tools"] if t[1] == "start"]
    assert {t[3] for t in starts} == {f"{out['run_id']}:call-1"}  # one idempotency key for every attempt
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
