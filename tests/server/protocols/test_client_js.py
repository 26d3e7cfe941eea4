"""The unmodified `@mastra/client-js` (pinned in clients/js) against a served app: its Responses
API calls and its A2A client (`clients/js/protocols.test.mjs`).

Without node or the pinned packages (`bash clients/js/run.sh`, or `bash clients/npm-ci.sh` in
clients/js) it skips, unless SLUICEGATE_REQUIRE_SERVICES=1 (CI), where it fails."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.server.live import serve_in_thread
from tests.server.protocols.protocol_app import build

from sluicegate.server import ServerSettings, create_app

CLIENT = Path(__file__).resolve().parents[3] / "clients" / "js"
REQUIRED = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"
TOKEN = "client-js-token"

pytestmark = pytest.mark.integration


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (CLIENT / "node_modules" / "@mastra" / "client-js").is_dir():
        return "@mastra/client-js is not installed (bash clients/npm-ci.sh in clients/js)"
    return None


def test_mastra_client_js_responses_and_a2a() -> None:
    missing = _missing()
    if missing is not None:
        if REQUIRED:
            pytest.fail(f"{missing} (SLUICEGATE_REQUIRE_SERVICES=1)")
        pytest.skip(missing)
    registry, _ = build()
    with serve_in_thread(create_app(registry, ServerSettings(api_token=TOKEN))) as url:
        env = {**os.environ, "SLUICEGATE_URL": url, "SLUICEGATE_API_TOKEN": TOKEN}
        run = subprocess.run(
            ["node", "--test", "protocols.test.mjs"],
            cwd=CLIENT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
