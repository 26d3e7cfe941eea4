"""How long a large input freezes the event loop on its way through a synchronous processor.

Sends a 10 MB user message (with a few e-mail addresses and card numbers in it) through an agent
whose input processor is `RegexFilter` (redact), while a 10 ms ticker on the same loop records
the longest time it was kept waiting. Above the offload threshold the synchronous hook runs in a
worker thread, so the loop keeps ticking. Target: the longest stall < 50 ms.

    uv run python benchmarks/large_input_stall.py [--mb 10]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from sluicegate import Agent
from sluicegate.processors import RegexFilter
from sluicegate.testing import MockModel, text_step

TICK = 0.010


async def ticker(stalls: list[float], last: list[float]) -> None:
    while True:
        last[0] = time.perf_counter()
        await asyncio.sleep(TICK)
        stalls.append(time.perf_counter() - last[0] - TICK)


def big_text(megabytes: float) -> str:
    filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. "
    block = filler * 170 + "write to ada@example.com or pay with 4111 1111 1111 1111. "
    return (block * int(megabytes * 1_000_000 / len(block) + 1))[: int(megabytes * 1_000_000)]


async def main(megabytes: float) -> None:
    text = big_text(megabytes)
    regex = RegexFilter(presets=["pii"], strategy="redact")
    agent = Agent("bench", model=MockModel([text_step("ok")]), input_processors=[regex])
    stalls: list[float] = []
    last = [time.perf_counter()]
    task = asyncio.create_task(ticker(stalls, last))
    await asyncio.sleep(0.05)
    start = time.perf_counter()
    result = await agent.generate(text)
    elapsed = time.perf_counter() - start
    stalls.append(time.perf_counter() - last[0] - TICK)  # the tick still in flight
    task.cancel()
    sent = result.response.messages
    assert sent, "the run produced no answer"
    print(f"{megabytes:g} MB through RegexFilter: {elapsed:.2f} s")
    print(f"  longest event-loop stall       {max(stalls) * 1000:7.1f} ms   (target < 50 ms)")
    print(f"  ticks                          {len(stalls):7d}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0)
    asyncio.run(main(parser.parse_args().mb))
