"""Time the first imports a user writes, each in a fresh interpreter (targets: `import sluicegate`
and `from sluicegate import Agent` at most 150 ms, `from sluicegate.memory import Memory` at most
250 ms; the verdict is on the median).

Prints the median and best of several runs, measured inside the child process around the
import statement alone (interpreter start-up excluded), which heavy optional modules each
statement loaded (none of openai, anthropic, asyncpg, numpy, redis should be there), and which
of the libraries sluicegate loads only on first use (pydantic for tools and schemas,
OpenTelemetry for tracing) it loaded.

Bytecode is cached as on any default install: one unmeasured run per statement writes
`__pycache__` first, even where `PYTHONDONTWRITEBYTECODE` is set (it is on some CI machines,
where every run would otherwise compile sluicegate and any uncompiled dependency from source,
which is a different figure: the first import after installing without bytecode). Load on the
machine inflates every figure (CPU time less than wall time): compare runs made on an idle
machine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

STATEMENTS = {
    "import sluicegate": 150.0,
    "from sluicegate import Agent": 150.0,
    "from sluicegate.memory import Memory": 250.0,
    "from sluicegate import Agent; from sluicegate.processors import PIIDetector": None,
}
HEAVY = (
    "openai",
    "anthropic",
    "asyncpg",
    "numpy",
    "redis",
    "sqlite_vec",
    "xllamacpp",
    "onnxruntime",
    "jsonschema",
)
ON_FIRST_USE = ("pydantic", "opentelemetry")
RUNS = 7

CHILD = """
import json, sys, time
start, cpu_start = time.perf_counter(), time.process_time()
exec({statement!r})
elapsed = (time.perf_counter() - start) * 1000
cpu = (time.process_time() - cpu_start) * 1000
print(json.dumps({{"ms": elapsed, "cpu_ms": cpu, "heavy": [m for m in {heavy!r} if m in sys.modules],
                  "first_use": [m for m in {first_use!r} if m in sys.modules]}}))
"""


def measure(statement: str) -> tuple[list[float], list[float], list[str], list[str]]:
    times: list[float] = []
    cpu_times: list[float] = []
    heavy: list[str] = []
    first_use: list[str] = []
    code = CHILD.format(statement=statement, heavy=HEAVY, first_use=ON_FIRST_USE)
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)  # warm-up
    for _ in range(RUNS):
        out = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env
        ).stdout
        result = json.loads(out.strip().splitlines()[-1])
        times.append(result["ms"])
        cpu_times.append(result["cpu_ms"])
        heavy = result["heavy"]
        first_use = result["first_use"]
    return times, cpu_times, heavy, first_use


def main() -> None:
    print(f"import times, {RUNS} fresh interpreters each; load average {os.getloadavg()[0]:.2f}")
    for statement, target in STATEMENTS.items():
        times, cpu_times, heavy, first_use = measure(statement)
        median = statistics.median(times)
        verdict = (
            "" if target is None else f"  target <= {target:.0f} ms: {'ok' if median <= target else 'OVER'}"
        )
        print(
            f"  {statement:<70} median {median:6.1f} ms  best {min(times):6.1f} ms"
            f"  (CPU median {statistics.median(cpu_times):6.1f} ms)"
            f"  heavy modules loaded: {', '.join(heavy) or 'none'}"
            f"  on-first-use libraries loaded: {', '.join(first_use) or 'none'}{verdict}"
        )


if __name__ == "__main__":
    main()
