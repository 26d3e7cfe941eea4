"""Time the first imports a user writes, each in a fresh interpreter (targets: `import sluicegate`
at most 150 ms, `from sluicegate.memory import Memory` at most 250 ms).

Prints the median and best of several runs, measured inside the child process around the
import statement alone (interpreter start-up excluded), and which heavy optional modules each
statement loaded (none of openai, anthropic, asyncpg, numpy, redis should be there).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

STATEMENTS = {
    "import sluicegate": 150.0,
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
RUNS = 7

CHILD = """
import json, sys, time
start = time.perf_counter()
exec({statement!r})
elapsed = (time.perf_counter() - start) * 1000
print(json.dumps({{"ms": elapsed, "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def measure(statement: str) -> tuple[list[float], list[str]]:
    times: list[float] = []
    heavy: list[str] = []
    for _ in range(RUNS):
        out = subprocess.run(
            [sys.executable, "-c", CHILD.format(statement=statement, heavy=HEAVY)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        result = json.loads(out.strip().splitlines()[-1])
        times.append(result["ms"])
        heavy = result["heavy"]
    return times, heavy


def main() -> None:
    print(f"import times, {RUNS} fresh interpreters each")
    for statement, target in STATEMENTS.items():
        times, heavy = measure(statement)
        verdict = (
            ""
            if target is None
            else f"  target <= {target:.0f} ms: {'ok' if min(times) <= target else 'OVER'}"
        )
        print(
            f"  {statement:<70} median {statistics.median(times):6.1f} ms  best {min(times):6.1f} ms"
            f"  heavy modules loaded: {', '.join(heavy) or 'none'}{verdict}"
        )


if __name__ == "__main__":
    main()
