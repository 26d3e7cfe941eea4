"""What a failing primary model costs with fallback models, with and without the circuit breaker.

Real HTTP on 127.0.0.1: the backup is a scripted OpenAI-compatible server (tests/models/
fake_provider.py) answering a short SSE stream; the primary is either a port nobody listens on
(connection refused) or a server that answers 500 after 200 ms. Requests run one after another.

1. Primary down (connection refused): the added latency per request is the median request time
   minus the median of the same requests sent to the backup alone. Target with the breaker on:
   <= 5 ms after the first request.
2. Primary answering 500 after 200 ms, for a few cooldown windows: which requests paid the
   200 ms. Target: after the circuit opened (its first `failures` requests), exactly one per
   cooldown window (the probe).

    uv run python benchmarks/fallback.py [--requests 200] [--cooldown 1.0] [--windows 4]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from sluicegate import Agent
from sluicegate.models import CircuitBreaker, OpenAICompatible

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "models"))
from fake_provider import FakeProvider, openai_sse

PATH = "/v1/chat/completions"
SLOW_500 = 0.2


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}


ANSWER = openai_sse([chunk({"role": "assistant", "content": "Hello"}), chunk({}, "stop")])


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def model(base_url: str, model_id: str) -> OpenAICompatible:
    return OpenAICompatible(model_id, base_url=base_url + "/v1", name=model_id)


async def timed(agent: Agent, backup: FakeProvider) -> float:
    backup.reply(PATH, sse=ANSWER)
    start = time.perf_counter()
    result = await agent.generate("hi")
    elapsed = time.perf_counter() - start
    assert result.text == "Hello", result.text
    return elapsed


async def primary_down(backup: FakeProvider, requests: int) -> None:
    dead = f"http://127.0.0.1:{closed_port()}"
    alone = Agent("alone", model=model(backup.url, "backup"))
    for _ in range(10):  # warm up: imports, the client, the server's threads
        await timed(alone, backup)
    baseline = [await timed(alone, backup) for _ in range(requests)]
    base = statistics.median(baseline)
    print(f"1. primary down (connection refused), {requests} requests each")
    print(f"   backup alone                 median {base * 1000:7.2f} ms per request")
    for label, breaker in (("no breaker", None), ("circuit breaker on", CircuitBreaker())):
        agent = Agent(
            "fallback",
            model=[{"model": model(dead, "primary"), "max_retries": 0}, model(backup.url, "backup")],
            circuit_breaker=breaker,
        )
        times = [await timed(agent, backup) for _ in range(requests)]
        rest = statistics.median(times[1:])
        print(
            f"   {label:<28} first {times[0] * 1000:7.2f} ms, then median {rest * 1000:7.2f}"
            f" ms: added {(rest - base) * 1000:+6.2f} ms per request"
        )
    print("   target: <= 5 ms added after the first request, with the breaker on")


async def primary_slow_500(
    backup: FakeProvider, failing: FakeProvider, cooldown: float, windows: int
) -> None:
    breaker = CircuitBreaker(cooldown=cooldown)
    agent = Agent(
        "fallback",
        model=[{"model": model(failing.url, "primary"), "max_retries": 0}, model(backup.url, "backup")],
        circuit_breaker=breaker,
    )
    for _ in range(1000):
        failing.reply(
            PATH, status=500, delay=SLOW_500, json={"error": {"message": "boom", "type": "server_error"}}
        )
    start = time.perf_counter()
    penalties: list[float] = []
    count = 0
    duration = breaker.failures * SLOW_500 + windows * (cooldown + SLOW_500)
    while time.perf_counter() - start < duration:
        began = time.perf_counter() - start
        if await timed(agent, backup) >= SLOW_500:
            penalties.append(began)
        count += 1
    opening, after = penalties[: breaker.failures], penalties[breaker.failures :]
    gaps = [b - a for a, b in zip([opening[-1], *after], after, strict=False)]
    print(
        f"2. primary answers 500 after {SLOW_500 * 1000:.0f} ms; "
        f"breaker failures={breaker.failures}, cooldown={cooldown} s"
    )
    print(f"   {count} requests in {duration:.1f} s; {len(penalties)} paid the {SLOW_500 * 1000:.0f} ms:")
    print(f"   opening the circuit: {len(opening)} (its first {breaker.failures} requests)")
    print(
        f"   after: {len(after)} in {windows} cooldown windows, at "
        + ", ".join(f"{t:.2f} s" for t in after)
        + (f"; gaps {', '.join(f'{g:.2f}' for g in gaps)} s (cooldown + the probe's 0.2 s)" if gaps else "")
    )
    print(f"   without the breaker all {count} requests would have paid it")
    print("   target: exactly one per cooldown window once open")


async def main(requests: int, cooldown: float, windows: int) -> None:
    logging.getLogger("sluicegate").setLevel(logging.ERROR)  # every fallover logs a WARNING
    backup, failing = FakeProvider(), FakeProvider()
    try:
        await primary_down(backup, requests)
        await primary_slow_500(backup, failing, cooldown, windows)
    finally:
        backup.close()
        failing.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--cooldown", type=float, default=1.0)
    parser.add_argument("--windows", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.cooldown, args.windows))
