#!/usr/bin/env python3
"""Bootstrap and run sluicegate's jobs on a machine that has only python3 and pip.

    python3 run.py demo     # the demo: an agent with processors (embedded model without API keys)
    python3 run.py test     # the whole test suite
    python3 run.py check    # lint (ruff), type check (mypy --strict), the import layers (lint-imports)
    python3 run.py bench    # the benchmarks
    python3 run.py lowest   # the fast tests on the lowest versions pyproject.toml allows

Each command installs what it needs first: `uv` (from PyPI, into .tools/ when it is not on
PATH) and the locked environment in .venv/ (`uv sync --frozen --all-extras`). Every locked
package installs from a prebuilt wheel (the embedded model runs on xllamacpp's prebuilt
llama.cpp), so the first sync is downloads only (about 0.5 GB of wheels, under a minute). Meanwhile
the elapsed time (and any package being built from source) is printed every 20 seconds; later
runs start in seconds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent
TOOLS = ROOT / ".tools"


def say(message: str) -> None:
    print(f"[run.py] {message}", flush=True)


# Machines behind a TLS-inspecting proxy trust its CA through the system store (as pip does here);
# uv's bundled roots would not.
os.environ.setdefault("UV_SYSTEM_CERTS", "1")
# Several checkouts may share one uv cache: wait for another process's build of the same package
# (and reuse it) instead of failing after uv's default five minutes.
os.environ.setdefault("UV_LOCK_TIMEOUT", "3600")

HEARTBEAT_SECONDS = 20
SLOW_BUILDS: dict[str, str] = {}
"""Why a package that uv builds from source takes long (none does today: all are wheels)."""


def find_uv() -> list[str]:
    """A command that runs uv, installing it into .tools/ if needed."""
    found = shutil.which("uv")
    if found:
        return [found]
    local = TOOLS / "bin" / "uv"
    if local.exists():
        return [str(local)]
    say("installing uv into .tools/ (first run only)")
    subprocess.run([sys.executable, "-m", "venv", str(TOOLS)], check=True)
    subprocess.run([str(TOOLS / "bin" / "python"), "-m", "pip", "install", "--quiet", "uv"], check=True)
    return [str(local)]


def sync(uv: list[str]) -> None:
    marker = ROOT / ".venv" / ".sluicegate-synced"
    lock = ROOT / "uv.lock"
    if marker.exists() and marker.stat().st_mtime >= lock.stat().st_mtime:
        return
    say("installing the locked environment into .venv/ (prebuilt wheels; the first time downloads them)")
    code = run_with_progress([*uv, "sync", "--frozen", "--all-extras"])
    if code:
        raise SystemExit(code)
    marker.touch()


def minutes(seconds: float) -> str:
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


_BUILD_LINE = re.compile(r"^\s*(Building|Built) ([A-Za-z0-9_.\-]+)")


def run_with_progress(command: list[str]) -> int:
    """Run a uv command, passing its output through and saying every HEARTBEAT_SECONDS how long
    it has been running and which packages are being built (uv itself is silent meanwhile)."""
    started = time.monotonic()
    building: dict[str, float] = {}
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(HEARTBEAT_SECONDS):
            now = time.monotonic()
            if building:
                for name, since in list(building.items()):
                    why = SLOW_BUILDS.get(name, "building from source")
                    took = minutes(now - since)
                    say(f"{minutes(now - started)} elapsed: building {name} for {took} ({why})")
            else:
                say(
                    f"{minutes(now - started)} elapsed: downloading and installing "
                    "(or waiting for another uv process that is building the same package)"
                )

    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    ticker = threading.Thread(target=heartbeat, daemon=True)
    ticker.start()
    assert process.stdout is not None
    for line in process.stdout:
        print(line, end="", flush=True)
        found = _BUILD_LINE.match(line)
        if found:
            name = found.group(2).lower()
            if found.group(1) == "Building":
                building[name] = time.monotonic()
            else:
                building.pop(name, None)
    code = process.wait()
    done.set()
    say(f"install step finished in {minutes(time.monotonic() - started)}")
    return code


def run(uv: list[str], *args: str) -> int:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return subprocess.run([*uv, "run", "--frozen", "--no-sync", *args], cwd=ROOT, env=env).returncode


LOWEST_VENV = ROOT / ".venv-lowest"
# Every extra (the embedded model's GGUF is in the `weights` group, not installed here: its tests
# skip); `server` and `otel` are exercised by tests outside LOWEST_TESTS.
LOWEST_EXTRAS = "anthropic,gemini,redis,postgres,vector,language,pii,local"
LOWEST_TESTS = ["tests/agent", "tests/models", "tests/processors", "tests/cache", "tests/test_imports.py"]
LOWEST_SECONDS = 1200


def lowest(uv: list[str], rest: list[str]) -> int:
    """Install the lowest versions pyproject.toml allows for its direct dependencies (the
    newest for everything else) into .venv-lowest/ and run the fast tests there, so the floors
    stay true. Bounded by LOWEST_SECONDS in all."""
    started = time.monotonic()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    test_tools = [r for r in project["dependency-groups"]["dev"] if re.match(r"(pytest|hypothesis)", r)]
    python = LOWEST_VENV / "bin" / "python"
    env = {key: value for key, value in os.environ.items() if key != "SLUICEGATE_REQUIRE_SERVICES"}
    env["VIRTUAL_ENV"] = str(LOWEST_VENV)
    steps = [
        [*uv, "venv", "--quiet", "--clear", "--python", sys.executable, str(LOWEST_VENV)],
        [
            *uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python),
            "--resolution",
            "lowest-direct",
            "-e",
            f".[{LOWEST_EXTRAS}]",
            *test_tools,
        ],
        [*uv, "pip", "list", "--python", str(python)],
        [
            str(python),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not integration",
            *(rest or LOWEST_TESTS),
        ],
    ]
    for step in steps:
        remaining = LOWEST_SECONDS - (time.monotonic() - started)
        try:
            code = subprocess.run(step, cwd=ROOT, env=env, timeout=max(remaining, 1)).returncode
        except subprocess.TimeoutExpired:
            say(f"lowest-versions check: over {LOWEST_SECONDS} s at `{' '.join(step[:4])} ...`; failing")
            return 1
        if code:
            say(f"lowest-versions check failed at `{' '.join(step[:4])} ...` (exit {code})")
            return code
    say(f"lowest-versions check passed in {minutes(time.monotonic() - started)}")
    return 0


SUITE_WORKERS = 4
"""At most this many test processes for the whole suite (each starts its own Redis, PostgreSQL
and Temporal dev server when its tests need them)."""


def suite_workers(rest: list[str]) -> list[str]:
    """pytest-xdist options for a run of the whole suite: one process per core (at most
    SUITE_WORKERS), each taking whole files, so module fixtures start once. Most of the suite's
    time is spent waiting on servers and subprocesses, so two processes on two cores nearly
    halve it. A run naming its own tests or its own `-n`/`-p` options is left as it is."""
    if any(not arg.startswith("-") or arg.startswith(("-n", "-p", "--dist")) for arg in rest):
        return []
    workers = min(os.cpu_count() or 1, SUITE_WORKERS)
    return ["-n", str(workers), "--dist", "loadfile"] if workers > 1 else []


def main(argv: list[str]) -> int:
    job = argv[0] if argv else "demo"
    rest = argv[1:]
    uv = find_uv()
    if job == "lowest":
        return lowest(uv, rest)
    sync(uv)
    if job == "demo":
        return run(uv, "python", "-m", "sluicegate.demo", *rest)
    if job == "test":
        return run(uv, "pytest", *suite_workers(rest), *rest)
    if job == "check":
        # lint-imports: the package layers (pyproject.toml's [tool.importlinter]) only point down.
        for step in (["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"], ["lint-imports"]):
            code = run(uv, *step)
            if code:
                return code
        return 0
    if job == "bench":
        code = 0
        for script in sorted((ROOT / "benchmarks").glob("*.py")):
            say(f"benchmark {script.name}")
            code = run(uv, "python", str(script), *rest) or code
        return code
    say(f"unknown job {job!r}; use demo, test, check, bench or lowest")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
