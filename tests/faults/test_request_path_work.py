"""No file reads or CPU-heavy setup on the event loop in the request path: a TokenLimiter's
encoding (a second of rank-file reading and checking) is built in the background when the
processor is created, not on the loop during the first request."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_first_request_with_a_token_limiter_does_not_stall_the_loop() -> None:
    script = textwrap.dedent(
        """
        import asyncio, time
        from sluicegate import Agent
        from sluicegate.processors import TokenLimiter
        from sluicegate.testing import MockModel, text_step
        from sluicegate import tokens

        limiter = TokenLimiter(1000)  # built at start-up, like an agent's processors
        built = getattr(tokens, "_build_encoding", None)
        deadline = time.monotonic() + (60 if built is not None else 2)
        while time.monotonic() < deadline and (built is None or built.cache_info().currsize == 0):
            time.sleep(0.05)  # the application starting up meanwhile

        async def main():
            worst = 0.0
            async def tick():
                nonlocal worst
                while True:
                    before = time.perf_counter()
                    await asyncio.sleep(0.01)
                    worst = max(worst, time.perf_counter() - before - 0.01)
            ticker = asyncio.create_task(tick())
            await asyncio.sleep(0.02)
            agent = Agent("a", model=MockModel([text_step("ok")]), input_processors=[limiter])
            before = time.perf_counter()
            await agent.generate("hello")
            worst = max(worst, time.perf_counter() - before)
            ticker.cancel()
            print(f"{worst:.3f}")

        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip()) < 0.1
