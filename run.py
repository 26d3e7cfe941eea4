#!/usr/bin/env python3
"""Bootstrap and run sluicegate's jobs on a machine that has only python3 and pip.

    python3 run.py demo     # the demo: an agent with processors (embedded model without API keys)
    python3 run.py test     # the whole test suite
    python3 run.py check    # lint (ruff) and type check (mypy --strict)
    python3 run.py bench    # the benchmarks

Each command installs what it needs first: `uv` (from PyPI, into .tools/ when it is not on
PATH) and the locked environment in .venv/ (`uv sync --frozen --all-extras`). The first sync
compiles llama-cpp-python for the embedded model, which takes 6–10 minutes on 2 cores; uv
caches the build, so later runs start in seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
TOOLS = ROOT / ".tools"


def say(message: str) -> None:
    print(f"[run.py] {message}", flush=True)


# Machines behind a TLS-inspecting proxy trust its CA through the system store (as pip does here);
# uv's bundled roots would not.
os.environ.setdefault("UV_SYSTEM_CERTS", "1")


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
    say("installing the locked environment into .venv/ (the first time compiles llama-cpp-python: ~6 min)")
    subprocess.run([*uv, "sync", "--frozen", "--all-extras"], cwd=ROOT, check=True)
    marker.touch()


def run(uv: list[str], *args: str) -> int:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return subprocess.run([*uv, "run", "--frozen", "--no-sync", *args], cwd=ROOT, env=env).returncode


def main(argv: list[str]) -> int:
    job = argv[0] if argv else "demo"
    rest = argv[1:]
    uv = find_uv()
    sync(uv)
    if job == "demo":
        return run(uv, "python", "-m", "sluicegate.demo", *rest)
    if job == "test":
        return run(uv, "pytest", *rest)
    if job == "check":
        for step in (["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"]):
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
    say(f"unknown job {job!r}; use demo, test, check or bench")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
