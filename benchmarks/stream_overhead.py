"""Per-chunk cost of streaming through an agent.

Prints µs per streamed text-delta for 10,000 deltas with 0, 1 and 5 no-op
`process_output_stream` processors, the time to the first text-delta, whether the cost grows
with stream length, and the floor: the same deltas iterated from a bare async generator (and
five chained ones). The "traced" column is the same run with tracing on (an SDK tracer
provider whose exporter drops everything, `sluicegate.tracing.configure`), measured
alternately with the untraced runs so both see the same machine load. Last, what the
deterministic guardrails add per delta in a real run (offline `PIIDetector()`, `RegexFilter`
`pii` preset), against the run without processors, alternately measured too (target <= 3 µs).

    uv run python benchmarks/stream_overhead.py [--deltas 10000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

from sluicegate import Agent
from sluicegate.processors import PIIDetector, Processor, RegexFilter
from sluicegate.testing import MockModel
from sluicegate.tracing import configure


class DropSpans:
    """A span exporter that exports nowhere: the cost measured is sluicegate's and the SDK's."""

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class NoOp(Processor):
    def __init__(self, index: int) -> None:
        super().__init__()
        self.id = f"noop-{index}"

    async def process_output_stream(self, args: Any) -> Any:
        return args.part


def parts(deltas: int) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": "tok "} for _ in range(deltas)),
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": deltas}},
    ]


async def agent_run(
    step: list[dict[str, Any]], processors: int | list[Processor], **options: Any
) -> tuple[float, float, list[float], float]:
    """(total seconds, seconds to first text-delta, per-delta seconds for each quarter, CPU
    seconds of this process: unlike wall time, not inflated by other jobs on the machine)."""
    chain = [NoOp(i) for i in range(processors)] if isinstance(processors, int) else processors
    agent = Agent("bench", model=MockModel([step]), output_processors=chain, **options)
    cpu = time.process_time()
    start = time.perf_counter()
    output = await agent.stream("go")
    first = 0.0
    marks: list[float] = []
    count = 0
    quarter = max(1, (len(step) - 5) // 4)
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            if count == 0:
                first = time.perf_counter() - start
            count += 1
            if count % quarter == 0:
                marks.append(time.perf_counter())
    total = time.perf_counter() - start
    cpu = time.process_time() - cpu
    quarters = [(b - a) / quarter for a, b in itertools.pairwise(marks)]
    return total, first, quarters, cpu


async def bare(step: list[dict[str, Any]], chained: int) -> float:
    async def source() -> AsyncIterator[dict[str, Any]]:
        for part in step:
            yield part

    async def relay(inner: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        async for part in inner:
            yield part

    stream: AsyncIterator[dict[str, Any]] = source()
    for _ in range(chained - 1):
        stream = relay(stream)
    start = time.perf_counter()
    async for _ in stream:
        pass
    return time.perf_counter() - start


async def main(deltas: int, repeat: int) -> None:
    step = parts(deltas)
    await agent_run(step, 5)  # warm up imports and caches
    print(f"streaming {deltas:,} text-deltas, median of {repeat} runs (µs per delta)")
    floor = statistics.median([await bare(step, 1) for _ in range(repeat)]) / deltas * 1e6
    floor5 = statistics.median([await bare(step, 5) for _ in range(repeat)]) / deltas * 1e6
    print(f"  bare async generator          {floor:7.2f}")
    print(f"  5 chained async generators    {floor5:7.2f}")
    results = {}
    traced_results = {}
    traced_cpu = {}
    # The agent's default run log (kept for `observe`) in every row but "no log" (run_log=None).
    for processors, label, options in (
        (0, "0 no-op processors", {}),
        (0, "0, run_log=None", {"run_log": None}),
        (1, "1 no-op processors", {}),
        (5, "5 no-op processors", {}),
    ):
        runs = []
        traced_runs = []
        for _ in range(repeat):
            runs.append(await agent_run(step, processors, **options))
            telemetry = configure(span_exporters=[DropSpans()], set_global=False)
            try:
                traced_runs.append(await agent_run(step, processors, **options))
            finally:
                telemetry.shutdown()
        per_delta = statistics.median(r[0] for r in runs) / deltas * 1e6
        traced = statistics.median(r[0] for r in traced_runs) / deltas * 1e6
        first = statistics.median(r[1] for r in runs) * 1e3
        quarters = [statistics.median(r[2][i] for r in runs) * 1e6 for i in range(len(runs[0][2]))]
        results[label] = per_delta
        traced_results[label] = traced
        cpu = statistics.median(r[3] for r in runs) / deltas * 1e6
        cpu_traced = statistics.median(r[3] for r in traced_runs) / deltas * 1e6
        low = min(r[3] for r in runs) / deltas * 1e6
        traced_cpu[label] = (cpu, cpu_traced, low)
        growth = f"{quarters[0]:.2f} -> {quarters[-1]:.2f}" if quarters else "n/a"
        print(
            f"  agent, {label:22s}{per_delta:7.2f}   traced {traced:7.2f} "
            f"({traced - per_delta:+.2f})   first chunk {first:.3f} ms   per-delta by quarter {growth}"
        )
    per_processor = (results["5 no-op processors"] - results["0 no-op processors"]) / 5
    print(f"  cost per no-op processor      {per_processor:7.2f}")
    print("  CPU µs per delta (this process only)   untraced   traced   added   untraced min")
    for label, (cpu, cpu_traced, low) in traced_cpu.items():
        print(f"    {label:32s}{cpu:7.2f}  {cpu_traced:7.2f}  {cpu_traced - cpu:+6.2f}   {low:7.2f}")
    print(
        "targets: <= 4 µs with none, <= 1.5 µs more per processor, first chunk <= 0.5 ms, no growth; "
        "tracing on adds <= 0.5 µs per delta with 5 processors"
    )
    print("  deterministic guardrails, CPU µs added per delta over no processors (target <= 3)")
    guards = {
        "PIIDetector() (offline)": PIIDetector,
        "RegexFilter pii, redact": lambda: RegexFilter(presets=["pii"], strategy="redact"),
    }
    for label, make in guards.items():
        bare_cpu, guarded_cpu = [], []
        for _ in range(repeat):
            bare_cpu.append((await agent_run(step, 0))[3])
            guarded_cpu.append((await agent_run(step, [make()]))[3])
        added = (statistics.median(guarded_cpu) - statistics.median(bare_cpu)) / deltas * 1e6
        print(f"    {label:28s}{added:+7.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    asyncio.run(main(options.deltas, options.repeat))
