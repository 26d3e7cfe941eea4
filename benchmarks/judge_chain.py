"""What a chain of LLM guardrails adds to a stream, in judge latencies.

Each judge is a fake detector model answering "nothing found" after a fixed latency (100 ms
by default); the main model streams 120 chunks 2 ms apart. For each chain the median wall time
of the whole stream (final whole-response checks included) is compared with the same stream
and no guardrails, and the difference is printed in judge latencies, with how long the stream
went on after the model's last part (also in judge latencies: less noisy on a busy machine)
and the most judge calls that were in flight at once. Target: every chain adds <= 1.2 judge latencies.

Chains (J = PIIDetector with a model, Regex = RegexFilter redacting the `pii` preset,
Normalizer = UnicodeNormalizer, which has no stream hook and so is not in the stream chain):
J, J-J, J-Regex-J, J-Regex-J-Normalizer-J.

    uv run python benchmarks/judge_chain.py [--repeat 3] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from sluicegate import Agent
from sluicegate.models.base import CallOptions, GenerateResult, StreamResult
from sluicegate.processors import PIIDetector, RegexFilter, UnicodeNormalizer
from sluicegate.testing import MockModel


class InFlight:
    """Counts judge calls running at once, over every judge of a chain."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.calls = 0


class Judge(MockModel):
    """A detector answering "nothing found" after `latency` seconds."""

    def __init__(self, latency: float, flight: InFlight) -> None:
        super().__init__()
        self.latency = latency
        self.flight = flight

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        flight = self.flight
        flight.calls += 1
        flight.now += 1
        flight.most = max(flight.most, flight.now)
        try:
            await asyncio.sleep(self.latency)
        finally:
            flight.now -= 1
        return GenerateResult(content=[{"type": "text", "text": "{}"}], finish_reason="stop", usage={})


class Paced(MockModel):
    """A main model streaming `deltas`, `pause` seconds apart."""

    def __init__(self, deltas: list[str], pause: float) -> None:
        super().__init__()
        self.deltas = deltas
        self.pause = pause
        self.done = 0.0
        """When the last part was handed over."""

    async def do_stream(self, options: CallOptions) -> StreamResult:
        async def parts() -> AsyncIterator[dict[str, Any]]:
            yield {"type": "stream-start", "warnings": []}
            yield {"type": "text-start", "id": "t1"}
            for delta in self.deltas:
                await asyncio.sleep(self.pause)
                yield {"type": "text-delta", "id": "t1", "delta": delta}
            yield {"type": "text-end", "id": "t1"}
            yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}}
            self.done = time.perf_counter()

        return StreamResult(stream=parts())


def deltas(count: int) -> list[str]:
    vocabulary = ["The ", "report ", "shows ", "steady ", "growth ", "across ", "regions, ", "and ", "more. "]
    return [vocabulary[i % len(vocabulary)] for i in range(count)]


def chains(latency: float, flight: InFlight) -> dict[str, Callable[[], list[Any]]]:
    made = iter(range(1, 100))

    def judge() -> PIIDetector:
        guard = PIIDetector(model=Judge(latency, flight))
        guard.id = f"judge-{next(made)}"  # a processor's stream state is kept per id
        return guard

    def regex() -> RegexFilter:
        return RegexFilter(presets=["pii"], strategy="redact", phase="output")

    return {
        "J": lambda: [judge()],
        "J-J": lambda: [judge(), judge()],
        "J-Regex-J": lambda: [judge(), regex(), judge()],
        "J-Regex-J-Normalizer-J": lambda: [judge(), regex(), judge(), UnicodeNormalizer(), judge()],
    }


async def wall_time(processors: list[Any], text: list[str], pause: float) -> tuple[float, float]:
    """The stream's wall time, and how long it went on after the model's last part."""
    model = Paced(text, pause)
    agent = Agent(name="bench", model=model, output_processors=processors)
    start = time.perf_counter()
    output = await agent.stream("go")
    async for _ in output.full_stream:
        pass
    end = time.perf_counter()
    return end - start, end - model.done


async def main(repeat: int, latency: float) -> None:
    text = deltas(120)
    pause = 0.002
    print(
        f"judge latency {latency * 1000:.0f} ms; {len(text)} chunks, {sum(map(len, text))} chars, "
        f"{pause * 1000:.0f} ms apart; median of {repeat} runs"
    )
    print(
        f"{'chain':<25}{'wall ms':>8}{'added judge latencies':>23}{'after the model':>17}"
        f"{'most in flight':>16}{'  chain with instant judges, ms added':>38}"
    )
    for name in chains(latency, InFlight()):
        times = []
        added = []
        tails = []
        own = []
        most = 0
        for _ in range(repeat):
            bare, _ = await wall_time([], text, pause)
            instant, _ = await wall_time(chains(0.0, InFlight())[name](), text, pause)
            flight = InFlight()
            total, tail = await wall_time(chains(latency, flight)[name](), text, pause)
            times.append(total)
            added.append((total - instant) / latency)
            tails.append(tail / latency)
            own.append(instant - bare)
            most = max(most, flight.most)
        more = statistics.median(added)
        verdict = "ok" if more <= 1.2 else "over 1.2"
        print(
            f"{name:<25}{statistics.median(times) * 1000:>8.0f}{more:>15.2f}  {verdict:<8}"
            f"{statistics.median(tails):>14.2f}{most:>14}{statistics.median(own) * 1000:>30.0f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per chain (the median is shown)")
    parser.add_argument("--latency", type=float, default=0.1, help="judge latency in seconds")
    options = parser.parse_args()
    asyncio.run(main(options.repeat, options.latency))
