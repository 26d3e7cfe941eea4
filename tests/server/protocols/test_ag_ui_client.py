"""AG-UI's own client, `@ag-ui/client`'s `HttpAgent` (clients/ag-ui/client.mjs), against the
AG-UI route served by uvicorn behind bearer auth: a streamed answer, a redaction, a tripwire, an
approval round trip, a frontend tool round trip and an aborted run, as the client applies them.

Without node or the pinned packages (`bash clients/ag-ui/run.sh --install-only`) it skips,
unless SLUICEGATE_REQUIRE_SERVICES=1 (CI), where it fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from sluicegate import Agent, Sluicegate
from sluicegate.processors import PIIDetector
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing.echo_model import EchoModel

from ..live import serve_in_thread
from ..test_cancellation import SlowModel

pytest.importorskip("ag_ui.core")
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
CLIENT = ROOT / "clients" / "ag-ui"
REQUIRED = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"
TOKEN = "ag-ui-client-token"
EMAIL = "alice.secret@example.com"


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (CLIENT / "node_modules" / "@ag-ui" / "client").is_dir():
        return "@ag-ui/client is not installed (bash clients/ag-ui/run.sh --install-only)"
    return None


@pytest.fixture(scope="module")
def seen() -> Any:
    """What the client saw in every scenario (one node process, one server)."""
    missing = _missing()
    if missing is not None:
        if REQUIRED:
            pytest.fail(f"{missing} (SLUICEGATE_REQUIRE_SERVICES=1)")
        pytest.skip(missing)
    import tests.server.example_app as example

    pii = PIIDetector(strategy="redact", redaction_method="placeholder", detection_types=["email"])
    slow = SlowModel(deltas=200, delay=0.02)
    agents = {
        "echo": example.echo,
        "plain": example.plain,
        "guarded": Agent(name="guarded", model=EchoModel(deltas=12), output_processors=[pii]),
        "slow": Agent(name="slow", model=slow),
    }
    registry = Sluicegate(agents=agents, storage=example.storage)
    with serve_in_thread(create_app(registry, ServerSettings(api_token=TOKEN))) as url:
        done = subprocess.run(
            ["node", str(CLIENT / "client.mjs"), url, TOKEN],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    result["slow_model"] = slow
    result["wiped"] = list(example.wiped)
    return result


def test_a_streamed_answer(seen: Any) -> None:
    plain = seen["plain"]
    assert plain["error"] is None and "thrown" not in plain
    assert plain["text"] == "Echo: hello there"
    assert plain["types"][0] == "RUN_STARTED" and plain["types"][-1] == "RUN_FINISHED"
    assert plain["messages"][-1] == {
        "id": plain["messages"][-1]["id"],
        "role": "assistant",
        "content": "Echo: hello there",
    }


def test_a_redacted_value_never_reaches_the_client(seen: Any) -> None:
    redacted = seen["redacted"]
    assert "[EMAIL]" in redacted["text"]
    assert EMAIL not in json.dumps(redacted["events"]) and EMAIL not in json.dumps(redacted["messages"][1:])


def test_a_tripwire_reaches_the_client_as_run_error_naming_the_processor(seen: Any) -> None:
    tripwire = seen["tripwire"]
    assert tripwire["error"]["code"] == "tripwire:block-word"
    assert tripwire["error"]["metadata"]["processorId"] == "block-word"
    assert tripwire["types"] == ["RUN_STARTED", "RUN_ERROR"]


def test_an_approval_round_trip(seen: Any) -> None:
    approval = seen["approval"]
    asked, answered = approval["asked"], approval["answered"]
    assert asked["outcome"]["outcome"] == "interrupt"
    assert asked["outcome"]["interrupts"][0]["reason"] == "tool_approval"
    assert "thrown" not in answered, answered.get("thrown")
    assert answered["text"] == 'Tool wipe said: {"wiped": "/tmp/client"}'
    assert "/tmp/client" in seen["wiped"]


def test_a_frontend_tool_round_trip(seen: Any) -> None:
    frontend = seen["frontend"]
    asked, answered = frontend["asked"], frontend["answered"]
    assert asked["outcome"]["outcome"] == "success" and asked["outcome"]["pending"] == [frontend["callId"]]
    assert "TOOL_CALL_RESULT" not in asked["types"]
    assert "thrown" not in answered, answered.get("thrown")
    assert answered["text"] == 'Tool pick_colour said: {"colour": "red"}'


def test_an_aborted_run_is_cancelled_on_the_server(seen: Any) -> None:
    model: SlowModel = seen["slow_model"]
    assert seen["abort"]["deltas"] >= 2
    deadline = time.monotonic() + 5
    while not model.closed.is_set() and time.monotonic() < deadline:  # set on the server's loop
        time.sleep(0.02)
    assert model.closed.is_set() and not model.finished and model.sent < model.deltas
