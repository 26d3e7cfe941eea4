"""The conformance suite (../shared/conformance) replayed against sluicegate: every scenario
recorded from Mastra (or written to the reference documents) must pass, except those that
record a feature sluicegate does not have yet, listed in `AWAITING` with the feature they wait
for. A listed scenario that starts passing fails this test too, so the list stays true."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from tests import conformance_suite

RUNNER = conformance_suite.SUITE / "run.py"

AWAITING: dict[str, str] = {}

_LINE = re.compile(r"^(PASS|FAIL) (\S+?):?(?: |$)")


@pytest.mark.skipif(not RUNNER.exists(), reason="the shared conformance suite is not beside this checkout")
def test_every_conformance_scenario_passes() -> None:
    completed = subprocess.run([sys.executable, str(RUNNER)], capture_output=True, text=True, timeout=300)
    output = completed.stdout + completed.stderr
    outcomes = {m.group(2): m.group(1) for m in map(_LINE.match, completed.stdout.splitlines()) if m}
    assert outcomes, output
    failed = sorted(name for name, outcome in outcomes.items() if outcome == "FAIL" and name not in AWAITING)
    assert not failed, f"scenarios failing: {failed}\n{output}"
    now_passing = sorted(name for name in AWAITING if outcomes.get(name) == "PASS")
    assert not now_passing, f"these pass now: remove them from AWAITING: {now_passing}"
    missing = sorted(name for name in AWAITING if name not in outcomes)
    assert not missing, f"AWAITING names scenarios the suite no longer has: {missing}"
