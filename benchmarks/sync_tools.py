"""Blocking (`def`) tools run in worker threads, so the tool calls of one step overlap.

Two tools that each block for `--seconds` (default 2) are called in one step; the run takes
about `--seconds`, not twice that. Prints the wall time of the step's tools and the ratio to
one tool's time.

    uv run python benchmarks/sync_tools.py [--seconds 2] [--tools 2]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from sluicegate import Agent, tool
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--tools", type=int, default=2)
    options = parser.parse_args()

    @tool
    def slow_lookup(key: str) -> str:
        """A blocking lookup (a database query, an HTTP call with a sync client)."""
        time.sleep(options.seconds)
        return key

    calls = [(f"call_{i}", "slow_lookup", {"key": str(i)}) for i in range(options.tools)]
    agent = Agent("bench", model=MockModel([tool_call_step(*calls), text_step("done")]), tools=[slow_lookup])
    started = time.perf_counter()
    result = asyncio.run(agent.generate("go"))
    elapsed = time.perf_counter() - started
    assert len(result.tool_results) == options.tools
    print(f"{options.tools} sync tools of {options.seconds:.1f} s each in one step: {elapsed:.2f} s wall")
    print(f"  ratio to one tool: {elapsed / options.seconds:.2f} (sequential would be {options.tools:.2f})")


if __name__ == "__main__":
    main()
