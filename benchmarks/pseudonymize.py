"""What `PIIDetector(strategy="pseudonymize")` costs.

Prints: µs per streamed text-delta with `restore_output=True` (the restoring stream with its
token hold-back) against the same stream with no processor; the time to seal and open a
conversation's mapping of 10, 100 and 1,000 values; and the time to conceal the known values
of such a mapping in a 100,000-character prompt text (what runs before every model call).

    uv run python benchmarks/pseudonymize.py [--deltas 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from sluicegate import Agent
from sluicegate.guardrails.pseudonyms import MappingCipher, PseudonymMap
from sluicegate.processors import PIIDetector, new_pseudonym_key
from sluicegate.testing import MockModel


def _deltas(count: int) -> list[dict[str, Any]]:
    words = ["Sent ", "to ", "<EMAIL_", "1>", " and ", "<PHONE_1>", ", ", "done. "]
    deltas = [{"type": "text-delta", "id": "t1", "delta": words[i % len(words)]} for i in range(count)]
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t1"},
        *deltas,
        {"type": "text-end", "id": "t1"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]


async def _stream_us(processors: list[Any], count: int) -> float:
    model = MockModel([_deltas(count)])
    agent = Agent("bench", model=model, input_processors=processors, output_processors=processors)
    started = time.perf_counter()
    output = await agent.stream("mail ada@example.com or call 555-123-4567")
    async for _ in output.full_stream:
        pass
    return (time.perf_counter() - started) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()

    plain, restoring = [], []
    for _ in range(options.repeat):
        pii = PIIDetector(strategy="pseudonymize", restore_output=True)
        plain.append(asyncio.run(_stream_us([], options.deltas)))
        restoring.append(asyncio.run(_stream_us([pii], options.deltas)))
    base, restored = statistics.median(plain), statistics.median(restoring)
    print(f"streaming {options.deltas:,} text-deltas, median of {options.repeat} runs (µs per delta)")
    print(f"  no processor                      {base:6.2f}")
    print(f"  pseudonymize, restore_output      {restored:6.2f}   (+{restored - base:.2f})")

    cipher = MappingCipher(new_pseudonym_key())
    text = ("Lorem ipsum dolor sit amet, user17@example.com consectetur. " * 1700)[:100_000]
    print("mapping of N values: seal + open (ms), conceal known values in 100,000 characters (ms)")
    for size in (10, 100, 1000):
        mapping = PseudonymMap({f"<EMAIL_{i + 1}>": f"user{i}@example.com" for i in range(size)})
        started = time.perf_counter()
        sealed = cipher.seal(mapping.to_json(), ("u1", "t1"))
        PseudonymMap.from_json(cipher.open(sealed, ("u1", "t1")))
        sealing = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        mapping.conceal(text)
        concealing = (time.perf_counter() - started) * 1000
        print(f"  {size:5d} values        seal+open {sealing:7.2f}    conceal {concealing:8.2f}")


if __name__ == "__main__":
    main()
