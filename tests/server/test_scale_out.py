"""Two server processes on one PostgreSQL + Redis continue one conversation: the server keeps
no conversation state of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.cache.redis_server import start_redis
from tests.server.live import free_port

sys.path.insert(0, str(Path(__file__).parents[1] / "memory"))
from memory_pg_server import PostgresUnavailable, start_postgres

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.integration


@pytest.fixture
def services() -> Iterator[tuple[str, str]]:
    try:
        dsn, stop_pg = start_postgres(in_memory=True)
    except PostgresUnavailable as error:
        if os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1":
            pytest.fail(str(error))
        pytest.skip(str(error))
    redis = start_redis()
    try:
        yield dsn, redis.url
    finally:
        redis.stop()
        stop_pg()


def _start(port: int, dsn: str, redis_url: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SLUICEGATE_PG_DSN": dsn, "SLUICEGATE_REDIS_URL": redis_url}
    with log.open("wb") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sluicegate",
                "serve",
                str(ROOT / "tests/server/scaleout_app.py"),
                "--port",
                str(port),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _wait(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text()}")
        try:
            if httpx.get(url + "/api", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"server did not start: {log.read_text()}")


def test_two_processes_continue_one_conversation(services: tuple[str, str], tmp_path: Path) -> None:
    dsn, redis_url = services
    ports = [free_port(), free_port()]
    processes = [_start(p, dsn, redis_url, tmp_path / f"server-{p}.log") for p in ports]
    try:
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        for url, process, port in zip(urls, processes, ports, strict=True):
            _wait(url, process, tmp_path / f"server-{port}.log")
        memory = {"thread": "conv-1", "resource": "ada"}

        def ask(url: str, text: str, **extra: object) -> str:
            response = httpx.post(
                url + "/api/agents/assistant/generate", json={"messages": text, **extra}, timeout=30
            )
            assert response.status_code == 200, response.text
            return str(response.json()["text"])

        first = ask(urls[0], "hello", memory=memory)
        second = ask(urls[1], "and again", memory=memory)
        third = ask(urls[0], "once more", memory=memory)
        pids = [p.pid for p in processes]
        assert first == f"pid {pids[0]} saw 1 user messages"
        assert second == f"pid {pids[1]} saw 2 user messages"  # history read from PostgreSQL
        assert third == f"pid {pids[0]} saw 3 user messages"
        listed = httpx.get(
            urls[1] + "/api/memory/threads/conv-1/messages", params={"agentId": "assistant"}
        ).json()
        assert [m["role"] for m in listed["messages"]] == ["user", "assistant"] * 3

        # The response cache lives in Redis: process B answers with what process A cached.
        cached_a = ask(urls[0], "no memory here")
        cached_b = ask(urls[1], "no memory here")
        assert cached_a == cached_b == f"pid {pids[0]} saw 1 user messages"

        # The cost guard's spend is in PostgreSQL: B counts what A spent for the same resource.
        def metered(url: str, thread: str) -> dict[str, object]:
            body = {"messages": "spend", "memory": {"thread": thread, "resource": "payer"}}
            response = httpx.post(url + "/api/agents/metered/generate", json=body, timeout=30)
            assert response.status_code == 200, response.text
            return dict(response.json())

        assert "tripwire" not in metered(urls[0], "m1")  # $2 spent, on A
        assert "tripwire" not in metered(urls[1], "m2")  # $4 spent: B saw $2 < $3
        blocked = metered(urls[1], "m3")  # B sees $4 ≥ $3 only because A's spend is shared
        assert blocked["tripwire"]["processorId"] == "cost-guard"
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
