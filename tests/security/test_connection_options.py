"""`--request-read-timeout` and `--max-connections`: validated, carried to uvicorn's worker
processes through the environment, and the guarded protocol is the one `serve` runs."""

from __future__ import annotations

import importlib.util
import pickle
import resource
from pathlib import Path
from typing import Any

import pytest

from sluicegate.cli import main
from sluicegate.errors import ConfigurationError
from sluicegate.server import ServerSettings
from sluicegate.server.connections import (
    ConnectionLimits,
    GuardedH11Protocol,
    default_max_connections,
    listen_backlog,
    protocol_class,
)

EXAMPLE = str(Path(__file__).parents[1] / "server" / "example_app.py")
ENV = ("SLUICEGATE_REQUEST_READ_TIMEOUT", "SLUICEGATE_MAX_CONNECTIONS", "SLUICEGATE_APP", "SLUICEGATE_STUDIO")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve` writes these into os.environ (for its workers): start without them, and have
    monkeypatch remove what the test left (it restores only what it has touched)."""
    for name in ENV:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = ServerSettings.from_env()
    assert defaults.request_read_timeout == 30.0 and defaults.max_connections is None
    monkeypatch.setenv("SLUICEGATE_REQUEST_READ_TIMEOUT", "2.5")
    monkeypatch.setenv("SLUICEGATE_MAX_CONNECTIONS", "300")
    settings = ServerSettings.from_env()
    assert settings.request_read_timeout == 2.5 and settings.max_connections == 300
    assert ConnectionLimits.from_settings(settings) == ConnectionLimits(2.5, 300)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SLUICEGATE_REQUEST_READ_TIMEOUT", "0", "positive number of seconds"),
        ("SLUICEGATE_REQUEST_READ_TIMEOUT", "-3", "positive number of seconds"),
        ("SLUICEGATE_REQUEST_READ_TIMEOUT", "nan", "positive number of seconds"),
        ("SLUICEGATE_REQUEST_READ_TIMEOUT", "inf", "positive number of seconds"),
        ("SLUICEGATE_REQUEST_READ_TIMEOUT", "soon", "number of seconds"),
        ("SLUICEGATE_MAX_CONNECTIONS", "0", "must be positive"),
        ("SLUICEGATE_MAX_CONNECTIONS", "many", "must be an integer"),
    ],
)
def test_bad_environment_values_are_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=f"{name}.*{message}"):
        ServerSettings.from_env()


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="request_read_timeout"):
        ServerSettings(request_read_timeout=0)
    with pytest.raises(ConfigurationError, match="max_connections"):
        ServerSettings(max_connections=0)


def test_the_default_cap_and_backlog_follow_the_open_file_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [(1024, 512, 256), (256, 128, 64), (1_048_576, 2048, 2048), (resource.RLIM_INFINITY, 2048, 2048)]
    for soft, cap, backlog in cases:
        monkeypatch.setattr(resource, "getrlimit", lambda _, soft=soft: (soft, resource.RLIM_INFINITY))
        assert (default_max_connections(), listen_backlog()) == (cap, backlog)
    assert ConnectionLimits.from_settings(ServerSettings()).max_connections == 2048
    assert ConnectionLimits.from_settings(ServerSettings(max_connections=7)).max_connections == 7


def test_protocols() -> None:
    assert protocol_class(http="h11") is GuardedH11Protocol
    # uvicorn pickles its config (with this class) into --workers and --reload processes.
    assert pickle.loads(pickle.dumps(GuardedH11Protocol)) is GuardedH11Protocol
    if importlib.util.find_spec("httptools") is not None:
        tools = protocol_class(http="httptools")
        assert tools.__name__ == "GuardedHttpToolsProtocol" and pickle.loads(pickle.dumps(tools)) is tools
    bound = protocol_class(ServerSettings(request_read_timeout=4, max_connections=9), "h11")
    assert issubclass(bound, GuardedH11Protocol)
    assert bound.limits == ConnectionLimits(4, 9)  # type: ignore[attr-defined]
    assert GuardedH11Protocol.limits is None  # from the environment


@pytest.fixture
def uvicorn_run(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    import uvicorn

    calls: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: calls.append((app, options)))
    return calls


def test_serve_passes_the_options_to_every_worker(
    uvicorn_run: list[tuple[str, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    args = ["serve", EXAMPLE, "--workers", "2", "--request-read-timeout", "7.5", "--max-connections", "40"]
    assert main(args) == 0
    (app, options) = uvicorn_run[0]
    assert app == "sluicegate.server.loader:app_from_env" and options["workers"] == 2
    assert options["http"] is protocol_class()  # the guarded protocol, pickled to each worker
    assert options["backlog"] == listen_backlog()
    # Workers read their limits from the environment they inherit.
    assert os.environ["SLUICEGATE_REQUEST_READ_TIMEOUT"] == "7.5"
    assert os.environ["SLUICEGATE_MAX_CONNECTIONS"] == "40"
    settings = ServerSettings.from_env()
    assert (settings.request_read_timeout, settings.max_connections) == (7.5, 40)


def test_serve_without_options_keeps_the_defaults(uvicorn_run: list[tuple[str, dict[str, Any]]]) -> None:
    import os

    assert main(["dev", EXAMPLE]) == 0
    assert uvicorn_run[0][1]["http"] is protocol_class() and uvicorn_run[0][1]["reload"] is True
    assert "SLUICEGATE_REQUEST_READ_TIMEOUT" not in os.environ
    assert "SLUICEGATE_MAX_CONNECTIONS" not in os.environ


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--request-read-timeout", "0"], "--request-read-timeout must be a positive number of seconds"),
        (["--request-read-timeout", "-1"], "--request-read-timeout must be a positive number of seconds"),
        (["--request-read-timeout", "nan"], "--request-read-timeout must be a positive number of seconds"),
        (["--max-connections", "0"], "--max-connections must be at least 1"),
    ],
)
def test_serve_refuses_bad_options(
    uvicorn_run: list[tuple[str, dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    for command in ("serve", "dev"):
        assert main([command, EXAMPLE, *args]) == 2
        assert message in capsys.readouterr().err
    assert uvicorn_run == []


def test_serve_refuses_a_bad_environment_before_starting(
    uvicorn_run: list[tuple[str, dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SLUICEGATE_MAX_CONNECTIONS", "lots")
    assert main(["serve", EXAMPLE]) == 2
    assert "SLUICEGATE_MAX_CONNECTIONS must be an integer" in capsys.readouterr().err
    assert uvicorn_run == []
