"""`serve --temporal` with separate `sluicegate worker` processes and a shared `RedisRunLog`:
the stream routes race the workers, and the client must not lose the run.

- `/stream` is answered while the run is not in the run log yet (a worker opens it, not the
  server): the route waits for it to open, and answers 503 naming the run when no worker
  opens it within `SLUICEGATE_TEMPORAL_OPEN_TIMEOUT`; never 400 "not in the run log".
- A decision (`approve-tool-call`, `decline-tool-call`, `resume-stream`) is accepted before a
  worker takes the run up again: its answer must carry the rest of the run, not only `[DONE]`.

The race is run 20 times in a row against one dev server and one worker process, started only
after the first request arrived."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from temporalio.client import Client

from sluicegate import Agent
from sluicegate.durable.temporal import TemporalRuns
from sluicegate.server.app import create_app
from sluicegate.server.settings import ServerSettings
from sluicegate.stream import Chunk, InMemoryRunLog
from sluicegate.stream.run_log import RunNotFoundError

from .race_app import RaceModel, build

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "tests" / "durable" / "race_app.py")
ROUNDS = 20


def _chunks(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]


def _text(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta")


class Worker:
    """One `sluicegate worker race_app.py` process on `queue`."""

    def __init__(self, target: str, queue: str, redis_url: str) -> None:
        fd, self.log = tempfile.mkstemp(prefix="sluicegate-race-worker-", suffix=".err")
        env = {**os.environ, "SG_REDIS_URL": redis_url, "PYTHONPATH": str(ROOT / "src")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sluicegate", "worker", APP, "--temporal", target, "--task-queue", queue],
            env=env,
            stdout=subprocess.PIPE,
            stderr=fd,
            cwd=ROOT,
        )
        os.close(fd)

    def wait_ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # printed once the worker polls
        assert b"sluicegate worker" in line, (line, Path(self.log).read_text())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        os.unlink(self.log)


def _server(monkeypatch: pytest.MonkeyPatch, target: str, queue: str, redis_url: str) -> httpx.AsyncClient:
    monkeypatch.setenv("SLUICEGATE_TEMPORAL", target)
    monkeypatch.setenv("SLUICEGATE_TEMPORAL_TASK_QUEUE", queue)
    server = create_app(build(redis_url), ServerSettings())
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=server), base_url="http://test", timeout=60)


async def _started(http: httpx.AsyncClient, prompt: str) -> tuple[str, list[dict[str, Any]]]:
    """A run up to its suspension, streamed by `/stream`; its id and chunks."""
    answer = await http.post("/api/agents/racer/stream", json={"messages": prompt})
    assert answer.status_code == 200, answer.text
    chunks = _chunks(answer.text)
    assert chunks and chunks[0]["type"] == "start", chunks
    assert chunks[-1]["type"] in ("tool-call-approval", "tool-call-suspended"), chunks
    return chunks[0]["runId"], chunks


async def test_stream_and_each_decision_carry_the_run_20_times_in_a_row(
    temporal_server: Any, redis_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first `/stream` arrives before the worker process even starts (it must wait for
    the run to open); then 20 rounds of `/stream` and a decision on that one worker."""
    queue = f"race-{uuid.uuid4()}"
    async with _server(monkeypatch, temporal_server.target, queue, redis_server.url) as http:
        early = asyncio.ensure_future(_started(http, "refund 7"))
        await asyncio.sleep(0.3)
        assert not early.done()  # no worker yet: the route waits for the run to open
        worker = Worker(temporal_server.target, queue, redis_server.url)
        try:
            run_id, _ = await asyncio.wait_for(early, 60)
            answer = await http.post(
                "/api/agents/racer/approve-tool-call", json={"runId": run_id, "toolCallId": "c1"}
            )
            assert answer.status_code == 200, answer.text
            assert '"refunded 7"' in _text(_chunks(answer.text))
            for round_ in range(ROUNDS):
                await _round(http, round_)
        finally:
            worker.stop()


async def _round(http: httpx.AsyncClient, round_: int) -> None:
    """One run to its suspension, then a decision (approve, decline, resume in turn) whose
    answer must be the continuation itself, not just `[DONE]`: from the first chunk after the
    suspension to the run's finish, with the model's answer to the decided call."""
    decisions = ("approve-tool-call", "decline-tool-call", "resume-stream")
    route = decisions[round_ % len(decisions)]
    run_id, first = await _started(http, "transfer it" if route == "resume-stream" else "refund 7")
    assert not {c["type"] for c in first} & {"tool-result", "finish"}
    body: dict[str, Any] = {"runId": run_id, "toolCallId": "c1"}
    if route == "resume-stream":
        body["resumeData"] = {"confirmed": True}
    answer = await http.post(f"/api/agents/racer/{route}", json=body)
    assert answer.status_code == 200, (round_, route, answer.text)
    rest = _chunks(answer.text)
    assert rest, (round_, route, answer.text)
    assert rest[-1]["type"] == "finish", (round_, route, [c["type"] for c in rest])
    assert {c["runId"] for c in rest} == {run_id}
    expected = {
        "approve-tool-call": '"refunded 7"',
        "decline-tool-call": "done: ",
        "resume-stream": '"sent": true',
    }[route]
    assert expected in _text(rest), (round_, route, _text(rest))


async def test_a_run_no_worker_opens_is_a_503_naming_it_after_the_open_timeout(
    temporal_server: Any, redis_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLUICEGATE_TEMPORAL_OPEN_TIMEOUT", "0.5")
    queue = f"nobody-{uuid.uuid4()}"
    async with _server(monkeypatch, temporal_server.target, queue, redis_server.url) as http:
        answer = await http.post("/api/agents/racer/stream", json={"messages": "refund 7"})
    assert answer.status_code == 503, answer.text
    body = answer.json()
    assert "did not open in the run log within 0.5 s" in body["error"]
    client = await Client.connect(temporal_server.target)
    await client.get_workflow_handle(body["runId"]).terminate("test: no worker on its queue")


class _OpensDuringTheFirstLook:
    """A run log whose run opens just after the first look-up missed it: the moment a worker
    opens the run while the route is checking."""

    def __init__(self) -> None:
        self.inner = InMemoryRunLog()
        self.looks = 0

    async def open(self, run_id: str, **owner: Any) -> Any:
        return await self.inner.open(run_id, **owner)

    async def info(self, run_id: str) -> Any:
        self.looks += 1
        if self.looks == 1:
            raise RunNotFoundError(run_id)
        return await self.inner.info(run_id)

    def read(self, run_id: str, offset: int = 0) -> Any:
        return self.inner.read(run_id, offset)


async def test_a_run_that_opens_between_two_looks_is_streamed_not_refused() -> None:
    """The 400 "not in the run log" of the finding: the route's look-up missed the run, the
    worker opened it, and a second look-up took it for another caller's run."""
    log = _OpensDuringTheFirstLook()
    agent = Agent("racer", model=RaceModel(), run_log=log)
    writer = await log.open("run-1", agent_id="racer")
    writer.append(Chunk("start", "run-1"))
    await writer.close("finished")
    runs = TemporalRuns(cast(Client, object()))
    observed = await runs.observe(agent, "run-1", wait=5)
    assert [c.type async for c in observed.full_stream] == ["start"]
