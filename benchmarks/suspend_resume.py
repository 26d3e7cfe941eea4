"""What waiting on a person costs: suspending a run (snapshot + store write) and resuming it
(store read + claim + rebuild + finish), against the same two-step run done in one go.

Each iteration runs a tool-call step and a text step. "fresh" runs them in one `generate`;
"suspend" is `generate(..., require_tool_approval=True)` up to the suspension; "resume" is
`approve_tool_call_generate` to the end. The overhead is suspend + resume - fresh, per run,
on the in-process store, a SQLite file and (with --postgres DSN) PostgreSQL. Medians in ms.

    uv run python benchmarks/suspend_resume.py [--runs 200] [--postgres postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sluicegate import Agent
from sluicegate.storage import InMemorySuspendedRunStore, PostgresStore, SQLiteStore
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool


async def lookup(input: Any, context: ToolContext) -> Any:
    return {"word": input["word"], "definition": "a gate for water"}


def agent(store: Any, runs: int) -> Agent:
    steps: list[Any] = []
    for _ in range(runs):
        steps += [tool_call_step(("c1", "lookup", {"word": "sluice"})), text_step("A sluice is a gate.")]
    tool = create_tool(id="lookup", input_schema={"type": "object"}, execute=lookup)
    return Agent(
        "bench", instructions="You define words.", model=MockModel(steps), tools=[tool], suspended_runs=store
    )


async def measure(store: Any, runs: int) -> dict[str, float]:
    fresh_agent, hitl_agent = agent(store, runs + 5), agent(store, runs + 5)
    for _ in range(5):  # warm up: imports, schema creation, first connections
        await fresh_agent.generate("Define sluice")
        first = await hitl_agent.generate("Define sluice", require_tool_approval=True)
        await hitl_agent.approve_tool_call_generate(run_id=first.run_id)
    fresh: list[float] = []
    suspend: list[float] = []
    resume: list[float] = []
    for _ in range(runs):  # alternated, so both see the same machine load
        start = time.perf_counter()
        await fresh_agent.generate("Define sluice")
        fresh.append(time.perf_counter() - start)
        start = time.perf_counter()
        first = await hitl_agent.generate("Define sluice", require_tool_approval=True)
        suspend.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = await hitl_agent.approve_tool_call_generate(run_id=first.run_id)
        resume.append(time.perf_counter() - start)
        assert result.text == "A sluice is a gate."
    med = {
        name: statistics.median(values) * 1000
        for name, values in (("fresh", fresh), ("suspend", suspend), ("resume", resume))
    }
    med["overhead"] = med["suspend"] + med["resume"] - med["fresh"]
    return med


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--postgres", help="a PostgreSQL DSN to measure PostgresStore too")
    options = parser.parse_args()
    stores: list[tuple[str, Any]] = [("in-process", InMemorySuspendedRunStore())]
    stores.append(("sqlite file", SQLiteStore(str(Path(tempfile.mkdtemp()) / "runs.db"))))
    if options.postgres:
        stores.append(("postgresql", PostgresStore(options.postgres)))
    print(
        f"{'store':<12} {'fresh':>8} {'suspend':>8} {'resume':>8} {'overhead':>9}"
        f"   (median ms, {options.runs} runs)"
    )
    for name, store in stores:
        med = await measure(store, options.runs)
        print(
            f"{name:<12} {med['fresh']:>8.2f} {med['suspend']:>8.2f} {med['resume']:>8.2f}"
            f" {med['overhead']:>9.2f}"
        )
        close = getattr(store, "close", None)
        if close is not None:
            await close()


if __name__ == "__main__":
    asyncio.run(main())
