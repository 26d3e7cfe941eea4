"""Throughput of the embedded model through an agent, with and without stream processors.

Streams SmolLM2-135M (greedy, fixed length) through `Agent.stream`, alternating runs without
processors and with 5 no-op `process_output_stream` processors, and reports the median tokens
per second of each and the relative cost of the processors (the target is under 2 %).

    uv run python benchmarks/local_model.py [--runs 9] [--tokens 192]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from sluicegate import Agent
from sluicegate.processors import Processor
from sluicegate.processors.args import ProcessOutputStreamArgs
from sluicegate.stream import Chunk

PROMPT = "Write a long story about a lighthouse keeper and the sea."


class NoOp(Processor):
    def __init__(self, index: int) -> None:
        super().__init__()
        self.id = f"noop-{index}"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | None:
        return args.part


async def one_run(agent: Agent, tokens: int) -> tuple[float, int, int]:
    """(tokens per second, output tokens, text-delta chunks) for one streamed answer."""
    started = time.perf_counter()
    output = await agent.stream(
        PROMPT, model_settings={"temperature": 0, "max_output_tokens": tokens, "seed": 7}
    )
    deltas = 0
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            deltas += 1
    elapsed = time.perf_counter() - started
    usage = await output.usage
    return usage.output_tokens / elapsed, usage.output_tokens, deltas


async def main(runs: int, tokens: int) -> None:
    bare = Agent(name="bare", instructions="You are a storyteller.", model="local/smollm2-135m")
    with_processors = Agent(
        name="processed",
        instructions="You are a storyteller.",
        model="local/smollm2-135m",
        output_processors=[NoOp(i) for i in range(5)],
    )
    await one_run(bare, 16)  # load the model and warm the caches
    await one_run(with_processors, 16)
    results: dict[str, list[float]] = {"bare": [], "processed": []}
    counts: dict[str, tuple[int, int]] = {}
    for index in range(runs):
        order = [("bare", bare), ("processed", with_processors)]
        if index % 2:
            order.reverse()
        for label, agent in order:
            rate, output_tokens, deltas = await one_run(agent, tokens)
            results[label].append(rate)
            counts[label] = (output_tokens, deltas)
    bare_median = statistics.median(results["bare"])
    processed_median = statistics.median(results["processed"])
    cost = (bare_median - processed_median) / bare_median * 100
    print(f"embedded model: SmolLM2-135M-Instruct Q4_1, {runs} alternating runs of {tokens} tokens each")
    for label in ("bare", "processed"):
        rates = ", ".join(f"{r:.1f}" for r in results[label])
        output_tokens, deltas = counts[label]
        print(
            f"  {label:<10} median {statistics.median(results[label]):7.1f} tok/s  "
            f"({output_tokens} tokens, {deltas} text-delta chunks)  runs: {rates}"
        )
    print(
        f"  5 no-op stream processors cost {cost:+.2f} % of throughput (target < 2 %): "
        f"{'PASS' if cost < 2 else 'FAIL'}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--tokens", type=int, default=192)
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.tokens))
