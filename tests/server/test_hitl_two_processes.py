"""A run suspended through one `sluicegate serve` process is listed, approved and observed
through another: both serve the example app on one SQLite file or one PostgreSQL database, and
their reconnect log is one Redis, so the resumed run's events continue the offsets the first
process gave."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.cache.redis_server import start_redis
from tests.memory.memory_pg_server import PostgresUnavailable, create_database, start_postgres
from tests.server.live import free_port

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.integration

WIPE = '/tool wipe {"path": "/srv/data"}'


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    records = response.text.split("\n\n")
    assert "data: [DONE]" in records
    return [json.loads(r[6:]) for r in records if r.startswith("data: {")]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def servers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    tmp_path = tmp_path_factory.mktemp("two-processes")
    if request.param == "postgres":
        try:
            dsn, stop_postgres = start_postgres(in_memory=True)
        except PostgresUnavailable as error:
            if os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1":
                pytest.fail(f"{error} (SLUICEGATE_REQUIRE_SERVICES=1)")
            pytest.skip(str(error))
        request.addfinalizer(stop_postgres)
        database = asyncio.run(create_database(dsn))
    else:
        database = str(tmp_path / "shared.db")
    redis = start_redis()
    env = {**os.environ, "SLUICEGATE_TEST_DB": database, "SLUICEGATE_REDIS_URL": redis.url}
    processes: list[tuple[subprocess.Popen[bytes], Path]] = []
    urls = []
    try:
        for name in ("a", "b"):
            port = free_port()
            log = tmp_path / f"server-{name}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "sluicegate",
                        "serve",
                        "tests/server/example_app.py",
                        "--port",
                        str(port),
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            processes.append((process, log))
            urls.append(f"http://127.0.0.1:{port}")
        for (process, log), url in zip(processes, urls, strict=True):
            _wait(url, process, log)
        yield urls[0], urls[1]
    finally:
        for process, _ in processes:
            process.terminate()
        for process, _ in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        redis.stop()


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


def test_suspend_on_one_process_and_approve_on_another(servers: tuple[str, str]) -> None:
    a, b = servers
    memory = {"thread": "t-two", "resource": "u-two"}
    with httpx.Client(timeout=30) as http:
        asked = _events(http.post(a + "/api/agents/echo/stream", json={"messages": WIPE, "memory": memory}))
        assert asked[-1]["type"] == "tool-call-approval"
        run_id = asked[-1]["runId"]
        listed = http.get(b + "/api/agents/echo/suspended-runs", params={"resourceId": "u-two"}).json()
        assert [r["runId"] for r in listed["runs"]] == [run_id]
        rest = _events(http.post(b + "/api/agents/echo/approve-tool-call", json={"runId": run_id}))
        assert rest[0]["payload"]["result"] == {"wiped": "/srv/data"} and rest[-1]["type"] == "finish"
        again = http.post(a + "/api/agents/echo/approve-tool-call", json={"runId": run_id})
        assert again.status_code == 404 and again.json()["field"] == "runId"
        # either process replays the whole run, the second part continuing the first's offsets
        for url in (a, b):
            replay = _events(http.post(url + "/api/agents/echo/observe", json={"runId": run_id}))
            assert replay == asked + rest
            tail = _events(
                http.post(url + "/api/agents/echo/observe", json={"runId": run_id, "offset": len(asked)})
            )
            assert tail == rest
        messages = http.get(b + "/api/memory/threads/t-two/messages", params={"resourceId": "u-two"}).json()
        assert "/srv/data" in json.dumps(messages["messages"])


def test_concurrent_approvals_through_both_processes_run_the_call_once(servers: tuple[str, str]) -> None:
    a, b = servers
    with httpx.Client(timeout=30) as http:
        run_id = _events(http.post(a + "/api/agents/echo/stream", json={"messages": WIPE}))[-1]["runId"]
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(
            pool.map(
                lambda url: httpx.post(
                    url + "/api/agents/echo/approve-tool-call-generate", json={"runId": run_id}
                ),
                [a, b] * 4,
            )
        )
    statuses = [answer.status_code for answer in answers]
    assert statuses.count(200) == 1, [(a.status_code, a.text[:200]) for a in answers]
    assert set(statuses) <= {200, 404, 409}
