"""The Host check on a loopback server (issue 30, finding 6): `sluicegate dev` (and `serve` on a
loopback address) answers only to loopback host names, so a page that rebinds its own name to
127.0.0.1 cannot drive the dev server; more names are allowed with `--allowed-hosts`."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate
from sluicegate.errors import ConfigurationError
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.hosts import host_name, is_loopback, loopback_rule
from sluicegate.testing.echo_model import EchoModel

APP = Path(__file__).parents[1] / "server" / "example_app.py"
REBOUND = "rebind.attacker.example"


def _app(allowed: tuple[str, ...]) -> TestClient:
    registry = Sluicegate(agents=[Agent(name="echo", model=EchoModel(deltas=2))])
    return TestClient(create_app(registry, ServerSettings(allowed_hosts=allowed, cors_origins=("*",))))


def test_a_loopback_rule_refuses_other_names() -> None:
    client = _app(loopback_rule("127.0.0.1", []))
    for host in (REBOUND, f"{REBOUND}:4111", "localhost.attacker.example", "127.0.0.2", "0.0.0.0:4111"):
        answer = client.get("/api/agents", headers={"host": host})
        assert answer.status_code == 400, (host, answer.text)
        assert answer.json()["code"] == "HOST_NOT_ALLOWED"
        assert "--allowed-hosts" in answer.json()["error"]
        assert answer.headers["x-content-type-options"] == "nosniff"
    # A preflight from the rebound page is refused too (CORS is inside the check).
    preflight = client.options(
        "/api/tools/add/execute",
        headers={"host": REBOUND, "origin": f"http://{REBOUND}", "access-control-request-method": "POST"},
    )
    assert preflight.status_code == 400
    for host in ("localhost:4111", "LOCALHOST", "127.0.0.1:4111", "[::1]:4111", "localhost."):
        assert client.get("/api/agents", headers={"host": host}).status_code == 200, host


def test_malformed_hosts_fail_closed() -> None:
    client = _app(loopback_rule("localhost", []))
    for host in ("", "localhost:", "localhost:abc", "[::1", "[nope]:1", "user@localhost", "local host"):
        assert client.get("/api/agents", headers={"host": host}).status_code == 400, host


def test_configured_names_and_the_wildcard() -> None:
    client = _app(loopback_rule("::1", ["dev.internal"]))
    assert client.get("/api/agents", headers={"host": "dev.internal:4111"}).status_code == 200
    assert client.get("/api/agents", headers={"host": REBOUND}).status_code == 400
    assert loopback_rule("127.0.0.1", ["*"]) == ("*",)
    assert _app(("*",)).get("/api/agents", headers={"host": REBOUND}).status_code == 200
    # Not on loopback: only what is configured; nothing configured, no check.
    assert loopback_rule("0.0.0.0", []) == ()
    assert loopback_rule("0.0.0.0", ["api.example.com"]) == ("api.example.com",)
    assert _app(()).get("/api/agents", headers={"host": REBOUND}).status_code == 200


def test_names_and_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost", "LOCALHOST"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "", "10.0.0.1", "example.com"))
    assert host_name("[0:0:0:0:0:0:0:1]:80") == "[0:0:0:0:0:0:0:1]"
    assert host_name("::1") == "[::1]"
    with pytest.raises(ConfigurationError, match="not a host name"):
        ServerSettings(allowed_hosts=("http://example.com",))
    with pytest.raises(ConfigurationError, match="allowed_hosts"):
        ServerSettings(allowed_hosts="localhost")  # type: ignore[arg-type]


def test_settings_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICEGATE_ALLOWED_HOSTS", "localhost, Dev.Internal:8080 ,[::1]")
    assert ServerSettings.from_env().allowed_hosts == ("localhost", "dev.internal", "[::1]")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def dev_server(tmp_path: Path) -> Iterator[str]:
    """`sluicegate dev` on 127.0.0.1, no token, `dev.internal` allowed besides the loopback names."""
    port = _free_port()
    log = tmp_path / "dev.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_")}
    env["SLUICEGATE_TEST_DB"] = str(tmp_path / "dev.db")
    command = [sys.executable, "-m", "sluicegate", "dev", str(APP), "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--allowed-hosts", "dev.internal"],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # `dev` runs a reloader and a worker: both stopped at the end
        env=env,
        cwd=tmp_path,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            try:
                httpx.get(url + "/api", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_sluicegate_dev_refuses_a_rebound_name(dev_server: str) -> None:
    port = dev_server.rsplit(":", 1)[1]
    rebound = {"host": f"{REBOUND}:{port}"}
    agents = httpx.get(dev_server + "/api/agents", headers=rebound)
    assert agents.status_code == 400, agents.text
    assert agents.json()["code"] == "HOST_NOT_ALLOWED"
    run = httpx.post(dev_server + "/api/tools/add/execute", json={"data": {"a": 1, "b": 2}}, headers=rebound)
    assert run.status_code == 400, run.text
    # The loopback names and the one allowed answer.
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"dev.internal:{port}"):
        answer = httpx.post(
            dev_server + "/api/tools/add/execute", json={"data": {"a": 1, "b": 2}}, headers={"host": host}
        )
        assert answer.status_code == 200 and answer.json() == {"sum": 3}, (host, answer.text)


def test_the_dev_error_page_is_behind_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken app under `dev` serves its source lines on an error page: not to a rebound name."""
    from sluicegate.server.loader import APP_ENV, DEV_ENV, app_from_env

    broken = tmp_path / "broken.py"
    source = "from sluicegate import Agent\nagent = Agent(name='a', model=undefined)\n"
    broken.write_text(source, encoding="utf-8")
    monkeypatch.setenv(APP_ENV, str(broken))
    monkeypatch.setenv(DEV_ENV, "1")
    monkeypatch.setenv("SLUICEGATE_ALLOWED_HOSTS", ",".join(loopback_rule("127.0.0.1", [])))
    client = TestClient(app_from_env(), raise_server_exceptions=False)
    assert client.get("/", headers={"host": REBOUND}).status_code == 400
    assert client.get("/", headers={"host": "localhost:4111"}).status_code == 500  # the error page


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[ServerSettings]:
    """The settings `serve`/`dev` would start the server with, instead of starting it."""
    import uvicorn

    runs: list[ServerSettings] = []
    monkeypatch.delenv("SLUICEGATE_ALLOWED_HOSTS", raising=False)
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: runs.append(ServerSettings.from_env()))
    return runs


def test_the_commands_set_the_rule(started: list[ServerSettings], monkeypatch: pytest.MonkeyPatch) -> None:
    from sluicegate.cli import main

    def hosts(*argv: str) -> tuple[str, ...]:
        monkeypatch.delenv("SLUICEGATE_ALLOWED_HOSTS", raising=False)  # each command on its own
        assert main([*argv]) == 0
        return started[-1].allowed_hosts

    loopback = ("localhost", "127.0.0.1", "[::1]")
    assert hosts("dev", str(APP)) == loopback
    assert hosts("serve", str(APP), "--host", "::1", "--allowed-hosts", "a.example,b.example") == (
        *loopback,
        "a.example",
        "b.example",
    )
    assert hosts("serve", str(APP), "--host", "0.0.0.0") == ()
    assert hosts("serve", str(APP), "--host", "0.0.0.0", "--allowed-hosts", "api.example.com") == (
        "api.example.com",
    )
    monkeypatch.setenv("SLUICEGATE_ALLOWED_HOSTS", "dev.internal")  # the variable, without the option
    assert main(["serve", str(APP)]) == 0
    assert started[-1].allowed_hosts == (*loopback, "dev.internal")
    assert main(["serve", str(APP), "--allowed-hosts", "bad/name"]) == 2
