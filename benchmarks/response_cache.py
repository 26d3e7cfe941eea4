"""What a `ResponseCache` hit costs, in process, for a 500-token answer (500 text deltas).

Figures (median of many runs, in-memory backend, `MockModel` so no network is involved):

- hit cost: the time `ResponseCache` spends answering a step from the cache (key derivation,
  lookup, decoding 500 chunks) — the work a hit adds in place of the model call;
- miss cost: what it adds to a step that goes to the model (key derivation, lookup, encoding
  and writing the entry);
- whole `generate` calls for comparison: with a hit, with a miss, and without the cache.

Run: `uv run python benchmarks/response_cache.py`
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from sluicegate import Agent
from sluicegate.cache import InMemoryServerCache
from sluicegate.processors import ResponseCache
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step

TOKENS = 500
RUNS = 300
PROMPT = "Explain how a sluice gate controls the flow of water."
ANSWER = "".join(f"tok{i} " for i in range(TOKENS))


def answer_step() -> list[dict[str, Any]]:
    return text_step(ANSWER, pieces=TOKENS, input_tokens=40, output_tokens=TOKENS)


class TimedResponseCache(ResponseCache):
    """Measures the processor's own hooks: the cost a hit or a miss adds to a step."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.request_seconds: list[float] = []
        self.response_seconds: list[float] = []

    async def process_llm_request(self, args: Any) -> Any:
        started = time.perf_counter()
        try:
            return await super().process_llm_request(args)
        finally:
            self.request_seconds.append(time.perf_counter() - started)

    async def process_llm_response(self, args: Any) -> None:
        started = time.perf_counter()
        try:
            await super().process_llm_response(args)
        finally:
            self.response_seconds.append(time.perf_counter() - started)


def ms(seconds: list[float]) -> str:
    median, p90 = statistics.median(seconds), statistics.quantiles(seconds, n=10)[-1]
    return f"{median * 1000:7.3f} ms (p90 {p90 * 1000:.3f})"


async def main() -> None:
    # Hits: one miss fills the cache, then every call replays it.
    hits = TimedResponseCache(cache=InMemoryServerCache())
    model = MockModel([answer_step()])
    agent = Agent(name="bench", model=model, input_processors=[hits])
    first = await agent.generate(PROMPT)
    assert len(first.text.split()) == TOKENS
    hits.request_seconds.clear()
    hit_generate: list[float] = []
    for _ in range(RUNS):
        started = time.perf_counter()
        result = await agent.generate(PROMPT)
        hit_generate.append(time.perf_counter() - started)
    assert len(model.calls) == 1 and result.text == first.text and result.steps[0].from_cache

    # Misses: a busted lookup on every call, so each call reaches the model and writes.
    misses = TimedResponseCache(cache=InMemoryServerCache(), bust=True)
    miss_model = MockModel([answer_step() for _ in range(RUNS)])
    miss_agent = Agent(name="bench", model=miss_model, input_processors=[misses])
    miss_generate: list[float] = []
    for _ in range(RUNS):
        started = time.perf_counter()
        await miss_agent.generate(PROMPT)
        miss_generate.append(time.perf_counter() - started)
    lookup_misses = TimedResponseCache(cache=InMemoryServerCache())
    lookup_model = MockModel([answer_step() for _ in range(RUNS)])
    lookup_agent = Agent(name="bench", model=lookup_model, input_processors=[lookup_misses])
    for i in range(RUNS):
        await lookup_agent.generate(f"{PROMPT} #{i}")

    # No cache at all.
    plain_model = MockModel([answer_step() for _ in range(RUNS)])
    plain_agent = Agent(name="bench", model=plain_model)
    plain_generate: list[float] = []
    for _ in range(RUNS):
        started = time.perf_counter()
        await plain_agent.generate(PROMPT)
        plain_generate.append(time.perf_counter() - started)

    miss_cost = [
        a + b for a, b in zip(lookup_misses.request_seconds, lookup_misses.response_seconds, strict=True)
    ]
    print(f"ResponseCache, in-memory backend, {TOKENS}-token answer ({TOKENS} text deltas), {RUNS} runs each")
    print(f"  hit cost  (lookup + replayed chunks) {ms(hits.request_seconds)}")
    print(f"  miss cost (lookup + encode + write)  {ms(miss_cost)}")
    print(f"    of which the write                 {ms(lookup_misses.response_seconds)}")
    print("  whole generate() call:")
    print(f"    cache hit                          {ms(hit_generate)}")
    print(f"    cache miss (bust: model + write)   {ms(miss_generate)}")
    print(f"    no cache                           {ms(plain_generate)}")
    verdict = "under" if statistics.median(hits.request_seconds) < 0.001 else "OVER"
    print(f"  hit cost is {verdict} the 1 ms budget")


if __name__ == "__main__":
    asyncio.run(main())
