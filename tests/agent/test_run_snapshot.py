"""`RunSnapshot` is lossless at every step boundary of every conformance scenario: the run
between two steps (or held for a person) goes to JSON, into a fresh run, and back to the same
JSON."""

from __future__ import annotations

import importlib.util
import json
import sys
from contextlib import aclosing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sluicegate.agent.suspension import RunSnapshot, restore_messages, restore_state, take_snapshot

CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"
SCENARIOS = sorted((CONFORMANCE / "scenarios").glob("*.json"))
TEXTS = {path: path.read_text() for path in SCENARIOS}


def _harness() -> ModuleType:
    """The conformance suite's own scenario builders (`run.py`), loaded from its folder."""
    if str(CONFORMANCE) not in sys.path:
        sys.path.insert(0, str(CONFORMANCE))
    spec = importlib.util.spec_from_file_location("conformance_harness", CONFORMANCE / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _round_trip(harness: Any, agent: Any, call: dict[str, Any], run: Any) -> RunSnapshot:
    snapshot = take_snapshot(run, run.state.held, False)
    assert json.loads(json.dumps(snapshot, allow_nan=False)) == snapshot
    fresh = await agent.prepare_run(
        call["input"], harness.call_options(call, harness.Context()), run_id=run.run_id
    )
    fresh.message_list = restore_messages(snapshot)
    held = restore_state(fresh, snapshot)
    assert take_snapshot(fresh, held, False) == snapshot
    return snapshot


@pytest.mark.skipif(not SCENARIOS, reason="the conformance suite is not beside the project")
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
async def test_every_step_boundary_round_trips(path: Path) -> None:
    harness = _harness()
    scenario = json.loads(TEXTS[path])
    ctx = harness.Context()
    agent = harness.build_agent(scenario, harness.build_model(scenario, []), ctx)
    call = scenario["call"]
    run = await agent.prepare_run(call["input"], harness.call_options(call, ctx))
    boundaries: list[RunSnapshot] = []
    async with aclosing(run.events()) as events:
        async for chunk in events:
            if chunk.type == "step-finish" or (chunk.type in ("tool-call-approval", "tool-call-suspended")):
                boundaries.append(await _round_trip(harness, agent, call, run))
    assert boundaries or run.finish_reason in ("error", "tripwire") or run.tripwire is not None
    assert [b["step_number"] for b in boundaries] == sorted(b["step_number"] for b in boundaries)


def test_json_context_keeps_the_json_entries_and_drops_the_others() -> None:
    from sluicegate import RequestContext
    from sluicegate.agent.suspension import json_context

    huge = 10**5000  # past Python's int-to-text digit limit: not JSON here
    context = RequestContext(
        {
            "user": "u1",
            "admin": False,
            "none": None,
            "n": 3,
            "ratio": 0.5,
            "nested": {"a": [1, "b"]},
            "nan": float("nan"),
            "tuple": (1, 2),
            "client": object(),
            "huge": huge,
        }
    )
    assert json_context(context) == {
        "user": "u1",
        "admin": False,
        "none": None,
        "n": 3,
        "ratio": 0.5,
        "nested": {"a": [1, "b"]},
    }
