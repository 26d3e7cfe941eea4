"""Where the AI SDK's own clients are (clients/ai-sdk, `bash clients/ai-sdk/run.sh
--install-only`), and how a test runs them: without node or the pinned packages a test skips,
unless SLUICEGATE_REQUIRE_SERVICES=1 (CI), where it fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CLIENTS = Path(__file__).resolve().parents[3] / "clients" / "ai-sdk"
REQUIRED = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"


def need(*paths: str) -> None:
    """Skip (fail under SLUICEGATE_REQUIRE_SERVICES=1) without node or a pinned package."""
    missing = None
    if shutil.which("node") is None:
        missing = "node is not installed"
    else:
        absent = [p for p in paths if not (CLIENTS / "node_modules" / p).exists()]
        if absent:
            missing = f"{', '.join(absent)} not installed: bash clients/ai-sdk/run.sh --install-only"
    if missing is None:
        return
    if REQUIRED:
        pytest.fail(f"{missing} (SLUICEGATE_REQUIRE_SERVICES=1)")
    pytest.skip(missing)


def run_chat(
    package: str, url: str, scenarios: list[str], token: str | None = None
) -> tuple[str, dict[str, Any]]:
    """`clients/ai-sdk/chat.mjs` with `package` (`ai` or `ai-v5`), every scenario in one node
    process: its raw output and its JSON (by scenario)."""
    args = ["node", "chat.mjs", package, url, ",".join(scenarios), *([token] if token else [])]
    done = subprocess.run(args, cwd=CLIENTS, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(done.stdout)
