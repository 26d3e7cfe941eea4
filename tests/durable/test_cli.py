"""`sluicegate worker` and `serve --temporal` on the command line."""

from __future__ import annotations

import os

import pytest

from sluicegate.cli import build_parser, main
from sluicegate.cli.serving import temporal_env


def test_worker_needs_a_temporal_frontend(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["worker", "app.py"])
    assert exit_info.value.code == 2
    assert "--temporal" in capsys.readouterr().err


def test_worker_refuses_a_bad_sticky_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "app.py", "--temporal", "127.0.0.1:1", "--sticky-timeout", "0"]) == 2
    assert "--sticky-timeout must be a positive number" in capsys.readouterr().err


def test_worker_refuses_a_bad_list_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "app.py", "--temporal", "127.0.0.1:1", "--list-timeout", "nan"]) == 2
    assert "--list-timeout must be a positive number" in capsys.readouterr().err


def test_serve_temporal_becomes_the_servers_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # A private copy of the environment: what the command sets must not outlive this test (a
    # leaked SLUICEGATE_TEMPORAL would turn every later app's runs into workflows).
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_TEMPORAL")}
    monkeypatch.setattr(os, "environ", environ)
    args = build_parser().parse_args(
        ["serve", "app.py", "--temporal", "127.0.0.1:7233", "--task-queue", "agents"]
    )
    temporal_env(args)
    assert environ["SLUICEGATE_TEMPORAL"] == "127.0.0.1:7233"
    assert environ["SLUICEGATE_TEMPORAL_TASK_QUEUE"] == "agents"
    temporal_env(
        build_parser().parse_args(["serve", "app.py", "--temporal", "127.0.0.1:7233", "--namespace", "prod"])
    )
    assert environ["SLUICEGATE_TEMPORAL_NAMESPACE"] == "prod"  # the workers' (`worker --namespace`)
    del environ["SLUICEGATE_TEMPORAL"]
    temporal_env(build_parser().parse_args(["serve", "app.py"]))
    assert "SLUICEGATE_TEMPORAL" not in environ


async def test_the_servers_runs_use_the_workers_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from sluicegate.server import durable_routes

    connected: list[tuple[str, str]] = []

    async def connect(target: str, *, namespace: str) -> object:
        connected.append((target, namespace))
        return object()

    monkeypatch.setattr(durable_routes.Client, "connect", connect)
    monkeypatch.setenv("SLUICEGATE_TEMPORAL", "127.0.0.1:7233")
    monkeypatch.setenv("SLUICEGATE_TEMPORAL_NAMESPACE", "prod")
    request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace()))
    runs = await durable_routes._runs(request)  # type: ignore[arg-type]
    assert connected == [("127.0.0.1:7233", "prod")]
    assert runs.task_queue == "sluicegate"
