"""`sluicegate dev` lets the studio's run overrides (model, instructions) through; `serve` does not
unless asked, and an explicit setting wins under `dev` too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import uvicorn

from sluicegate.cli import main
from sluicegate.server.loader import APP_ENV
from sluicegate.server.settings import ServerSettings

APP = str(Path(__file__).parent / "example_app.py")
VARIABLE = "SLUICEGATE_ALLOW_CLIENT_OVERRIDES"


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The settings the server would start with, instead of starting it."""
    runs: list[dict[str, Any]] = []
    for name in (VARIABLE, "SLUICEGATE_STUDIO", APP_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(
        uvicorn, "run", lambda *args, **kwargs: runs.append({"settings": ServerSettings.from_env()})
    )
    return runs


def test_dev_allows_overrides(started: list[dict[str, Any]]) -> None:
    assert main(["dev", APP]) == 0
    assert started[0]["settings"].allow_client_overrides is True
    assert started[0]["settings"].studio is True


def test_serve_keeps_them_off(started: list[dict[str, Any]]) -> None:
    assert main(["serve", APP, "--studio"]) == 0
    assert started[0]["settings"].allow_client_overrides is False


def test_dev_respects_an_explicit_no(started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIABLE, "0")
    assert main(["dev", APP]) == 0
    assert started[0]["settings"].allow_client_overrides is False
