"""`ContextCompactor`: prompt tokens and latency per turn of a long conversation, with and
without compaction. Each turn is a user question, a `lookup` tool call with a large result, and
an answer (two model calls), on a thread whose whole history memory loads (SQLite, in memory).
The models are scripted (no network): latency is sluicegate's own work per turn (history, prompt,
processors, counting, the summary's bookkeeping), and the summarizer answers at once, so a real
summary call's time comes on top of the turns that compact (`compactions` says how many).

    uv run python benchmarks/compaction.py            # 200 turns
    uv run python benchmarks/compaction.py 60         # fewer
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.processors.builtin.compaction_models import LookupModel, Summarizer, lookup_result

from sluicegate import Agent, create_tool
from sluicegate.memory import Memory
from sluicegate.processors import ContextCompactor
from sluicegate.storage import SQLiteStore

TRIGGER = 4000


def lookup_tool() -> Any:
    turns = iter(range(1, 1_000_000))
    return create_tool(
        id="lookup",
        description="look a topic up",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
        execute=lambda args, context: lookup_result(next(turns), 3000),
    )


async def conversation(turns: int, compact: bool) -> dict[str, Any]:
    store = SQLiteStore(":memory:")
    model, summarizer = LookupModel(), Summarizer()
    processors = [ContextCompactor(model=summarizer, trigger_tokens=TRIGGER, keep_last=4, store=store)]
    agent = Agent(
        "bench",
        model=model,
        tools=[lookup_tool()],
        memory=Memory(storage=store, options={"last_messages": None}),
        input_processors=processors if compact else [],
    )
    where = {"thread": "t1", "resource": "u1"}
    latencies: list[float] = []
    for turn in range(turns):
        started = time.perf_counter()
        await agent.generate(f"Tell me about topic {turn}", memory=where)
        latencies.append((time.perf_counter() - started) * 1000)
    await store.close()
    return {"tokens": model.prompt_tokens, "latencies": latencies, "compactions": summarizer.calls}


def row(name: str, result: dict[str, Any], turns: int) -> str:
    tokens, latencies = result["tokens"], result["latencies"]
    last = tokens[-20:]
    tail = latencies[-20:]
    return (
        f"| {name} | {statistics.mean(tokens):,.0f} | {max(tokens):,} | {statistics.mean(last):,.0f} | "
        f"{statistics.median(latencies):.1f} | {statistics.median(tail):.1f} | {result['compactions']} |"
    )


async def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    print(f"{turns} turns, 2 model calls each, a 3,000-character tool result per turn; trigger {TRIGGER:,}")
    print()
    print(
        "| run | prompt tokens, mean | max | mean of the last 20 calls | ms/turn, median | "
        "ms/turn, median of the last 20 | compactions |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, compact in (("without compaction", False), ("with ContextCompactor", True)):
        print(row(name, await conversation(turns, compact), turns))


if __name__ == "__main__":
    asyncio.run(main())
