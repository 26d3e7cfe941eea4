"""The conformance suite (../shared/conformance) replayed against sluicegate: every scenario
recorded from Mastra (or written to the reference documents) must pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "run.py"


@pytest.mark.skipif(not RUNNER.exists(), reason="the shared conformance suite is not beside this checkout")
def test_every_conformance_scenario_passes():
    completed = subprocess.run([sys.executable, str(RUNNER)], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stdout.strip().splitlines()[-1].endswith(", 0 failed")
