"""`sluicegate init my-app && cd my-app && sluicegate dev app.py`: the scaffold's own test
passes, `dev` serves its guarded agent within seconds (and answers on the embedded model when
its weights are here), and `dev` lets a browser on any loopback port call it while `serve`
allows only the origins it is given."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tests.server.live import free_port

from sluicegate import Agent, Sluicegate
from sluicegate.cli import main
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing import MockModel

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT / "src")}


def test_init_writes_an_app_and_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "my-app"
    assert main(["init", str(target)]) == 0
    assert sorted(p.name for p in target.iterdir()) == ["README.md", "app.py", "test_app.py"]
    assert "sluicegate dev app.py" in capsys.readouterr().out
    assert "# my-app" in (target / "README.md").read_text()
    (target / "app.py").write_text("# mine\n")
    assert main(["init", str(target)]) == 2
    assert "already has app.py, test_app.py, README.md" in capsys.readouterr().err
    assert (target / "app.py").read_text() == "# mine\n"


def test_the_scaffolds_own_test_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process (scripts/first_hour.py runs it with pytest in a fresh environment)."""
    assert main(["init", str(tmp_path / "app")]) == 0
    monkeypatch.syspath_prepend(str(tmp_path / "app"))
    for name in ("app", "test_app"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    test_app = importlib.import_module("test_app")
    tests = [value for name, value in vars(test_app).items() if name.startswith("test_")]
    assert len(tests) == 2
    try:
        for test in tests:
            test()
    finally:
        for name in ("app", "test_app"):
            sys.modules.pop(name, None)  # this scaffold's modules (others are restored by monkeypatch)


def _weights_here() -> bool:
    try:
        from sluicegate.models.local import available_path
    except ImportError:
        return False
    return available_path() is not None


def test_dev_serves_the_scaffold_at_once(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path / "app")]) == 0
    port = free_port()
    started = time.monotonic()
    server = subprocess.Popen(
        [sys.executable, "-m", "sluicegate", "dev", "app.py", "--port", str(port)],
        cwd=tmp_path / "app",
        env={**ENV, "SLUICEGATE_CORS_ORIGINS": ""},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the reloader and its worker: stopped together below
    )
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
            try:
                if httpx.get(f"{base}/api/agents", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            # ~5 s on an idle 2-core machine (the reloader and its worker each import the app);
            # the bound leaves room for a loaded one
            assert time.monotonic() - started < 15, "dev did not serve within 15 s"
            time.sleep(0.1)
        up = time.monotonic() - started
        agents = httpx.get(f"{base}/api/agents").json()
        assert list(agents) == ["support"]
        assert {p["id"] for p in agents["support"]["inputProcessors"]} == {"regex-filter"}
        # Mastra's Studio (or a front end) on any port of this machine may call it.
        preflight = httpx.options(
            f"{base}/api/agents",
            headers={"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"},
        )
        assert preflight.headers.get("access-control-allow-origin") == "http://localhost:5173"
        if _weights_here():
            answer = httpx.post(
                f"{base}/api/agents/support/generate",
                json={
                    "messages": "My email is ada@example.com. Say hello.",
                    "modelSettings": {"maxOutputTokens": 24},
                },
                timeout=60,
            )
            assert answer.status_code == 200, answer.text
            assert answer.json()["text"]
            print(
                f"dev served in {up:.1f} s, answered on the embedded model "
                f"at {time.monotonic() - started:.1f} s"
            )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def _allowed(app_settings: ServerSettings, origin: str) -> str | None:
    from fastapi.testclient import TestClient

    app = create_app(Sluicegate(agents=[Agent("a", model=MockModel([]))]), app_settings)
    with TestClient(app) as client:
        response = client.options(
            "/api/agents", headers={"Origin": origin, "Access-Control-Request-Method": "GET"}
        )
    return response.headers.get("access-control-allow-origin")


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost:3000", True),
        ("http://localhost:5173", True),
        ("http://127.0.0.1:4111", True),
        ("http://[::1]:8080", True),
        ("http://localhost", True),
        ("http://localhost.evil.example:3000", False),
        ("http://127.0.0.1.evil.example", False),
        ("https://example.com", False),
        ("http://localhost:3000/path", False),
    ],
)
def test_loopback_cors_allows_this_machine_only(origin: str, allowed: bool) -> None:
    assert (_allowed(ServerSettings(cors_loopback=True), origin) == origin) is allowed


def test_serve_allows_only_the_origins_it_is_given() -> None:
    settings = ServerSettings(cors_origins=("http://localhost:3000",))
    assert _allowed(settings, "http://localhost:3000") == "http://localhost:3000"
    assert _allowed(settings, "http://localhost:5173") is None


def test_dev_turns_loopback_cors_on_and_serve_does_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: dict[str, str | None] = {}

    def fake_serve(target: str, **options: object) -> int:
        seen[str(options["reload"])] = "on" if ServerSettings.from_env().cors_loopback else "off"
        return 0

    for name in ("SLUICEGATE_CORS_LOOPBACK", "SLUICEGATE_ALLOW_CLIENT_OVERRIDES"):
        monkeypatch.setenv(name, "")  # restored after the test: dev sets them
        monkeypatch.delenv(name)
    monkeypatch.setattr("sluicegate.cli.serving.serve", fake_serve)
    assert main(["serve", "app.py"]) == 0
    assert main(["dev", "app.py"]) == 0
    assert seen == {"False": "off", "True": "on"}
