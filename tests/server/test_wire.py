"""Mastra's wire, field for field: clients/wire/compare.py sends the same requests to real Mastra's
HTTP server (the packages pinned in clients/wire/package-lock.json, started the way `mastra dev`
starts it) and to `sluicegate serve`, with the same agents on the same scripted models, and every
difference must be one clients/wire/allowlist.toml allows, with its reason. An entry that allows
nothing fails too, so the list shrinks as the answers converge.

Without node or the pinned packages (`bash clients/wire/run.sh --install-only`) it skips, unless
SLUICEGATE_REQUIRE_SERVICES=1 (CI), where it fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
WIRE = ROOT / "clients" / "wire"
REQUIRED = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"

pytestmark = pytest.mark.integration


def _load_compare() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wire_compare", WIRE / "compare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


compare = _load_compare()


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (WIRE / "node_modules" / "@mastra" / "deployer").is_dir():
        return "the Mastra packages are not installed (bash clients/wire/run.sh --install-only)"
    return None


def test_every_difference_from_mastras_wire_is_allowed_with_its_reason(tmp_path: Path) -> None:
    missing = _missing()
    if missing is not None:
        if REQUIRED:
            pytest.fail(f"{missing} (SLUICEGATE_REQUIRE_SERVICES=1)")
        pytest.skip(missing)
    run = subprocess.run(
        [
            sys.executable,
            str(WIRE / "compare.py"),
            "--out",
            str(tmp_path),
            "--allowlist",
            str(WIRE / "allowlist.toml"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    found = json.loads((tmp_path / "findings.json").read_text())
    assert len(found) == len(compare.REQUESTS)  # every request got both answers compared


def test_the_allowlist_names_a_reason_for_every_entry() -> None:
    entries = compare.load_allowlist(WIRE / "allowlist.toml")
    assert entries
    kinds = {"status", "header", "types", "body-kind", "mastra-only", "sluicegate-only", "value"}
    for entry in entries:
        assert entry["kind"] in kinds, entry
        assert len(entry["reason"]) > 15, entry


def test_a_difference_outside_the_allowlist_fails_and_an_unused_entry_too() -> None:
    entries = [
        {"kind": "value", "path": "finish:payload.stepResult.*", "reason": "r", "requests": "echo-*"},
        {"kind": "mastra-only", "path": "never", "reason": "r"},
    ]
    found = {
        "echo-stream": [
            {"kind": "value", "path": "finish:payload.stepResult.isContinued", "mastra": 1, "sluicegate": 2}
        ],
        "approver-stream-1": [
            {"kind": "value", "path": "finish:payload.stepResult.isContinued", "mastra": 1, "sluicegate": 2}
        ],
    }
    problems = compare.check(found, entries, complete=True)
    assert problems == [
        "approver-stream-1: value finish:payload.stepResult.isContinued (mastra 1, sluicegate 2)",
        "allowlist entry mastra-only 'never' (*) allows nothing: remove it",
    ]
    assert compare.check(found, entries, complete=False) == problems[:1]  # an --only run


def test_sse_findings_report_the_event_sequence_and_the_fields_of_each_event_type() -> None:
    mastra = [
        {"type": "tripwire", "data": {"type": "tripwire", "payload": {"reason": "no"}}},
        {"type": "[DONE]", "data": "[DONE]"},
    ]
    ours = [
        {"type": "start", "data": {"type": "start", "payload": {}}},
        {"type": "tripwire", "data": {"type": "tripwire", "payload": {"reason": "no", "retry": False}}},
        {"type": "[DONE]", "data": "[DONE]"},
    ]
    found = compare.sse_findings(mastra, ours)
    assert found[0]["kind"] == "types"
    assert {"kind": "sluicegate-only", "path": "tripwire:payload.retry"} in found


def test_a_json_body_field_one_side_leaves_empty_and_the_other_fills_is_not_missing() -> None:
    mastra = {"defaultOptions": {}, "uiMessages": None, "hasDraft": False}
    ours = {"defaultOptions": {"maxSteps": 5}, "uiMessages": [{"id": "m1"}]}
    found = compare.json_findings(mastra, ours)
    assert {"kind": "mastra-only", "path": "hasDraft"} in found  # missing: no value at all
    assert {"kind": "sluicegate-only", "path": "defaultOptions.maxSteps"} in found
    assert {"kind": "sluicegate-only", "path": "uiMessages[].id"} in found
    assert not [f for f in found if f["path"] in ("defaultOptions", "uiMessages")]
