#!/usr/bin/env python3
"""A new user's first hour, from a fresh copy of the repository (no .venv), timed:

1. README's two commands: `python3 run.py demo` (installs the locked environment into a fresh
   .venv: from uv's cache when it is warm) and `python3 run.py test` (on one file here: CI's
   main step runs the whole suite);
2. docs/tutorial.md: every Python step, copied into a file and run as the reader would;
3. `sluicegate init my-app`, the scaffold's own test, and `sluicegate dev app.py` answering on
   the embedded model;
4. human in the loop in two processes (docs/human-in-the-loop.md, "From the command line"):
   `sluicegate run` stops and exits 4 with the run id, `sluicegate approve` in another process
   finishes the run.

    python3 scripts/first_hour.py            # CI runs it after the test suite (.ci/run)

Each step has a deadline; the first failure ends the script with its output and status 1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)


def say(text: str) -> None:
    print(f"[first-hour] {text}", flush=True)


def user_env() -> dict[str, str]:
    """This environment as a new user's shell has it: no provider key, no active virtualenv."""
    return {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV" and not k.endswith("_API_KEY")}


def run(
    command: list[str], cwd: Path, *, timeout: float, expect: int = 0, env: dict[str, str] | None = None
) -> str:
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env or user_env()
    )
    took = time.monotonic() - started
    if done.returncode != expect:
        print(done.stdout[-6000:], done.stderr[-6000:], sep="\n", file=sys.stderr)
        raise SystemExit(f"[first-hour] FAILED: {' '.join(command)} exited {done.returncode}, not {expect}")
    say(f"ok in {took:.1f} s: {' '.join(command)}")
    return done.stdout + done.stderr


def fresh_copy(target: Path) -> None:
    """The tracked files, as a clone has them (no .venv, no caches)."""
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def python_blocks(markdown: Path) -> list[str]:
    """The runnable Python blocks of a page (not those marked `no-run`)."""
    out = []
    for match in FENCE.finditer(markdown.read_text(encoding="utf-8")):
        info = match.group(0).split("\n", 1)[0]
        if match.group(1) == "python" and "no-run" not in info:
            out.append(match.group(2))
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def post(url: str, body: dict[str, object], timeout: float) -> dict[str, object]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        result: dict[str, object] = json.loads(answer.read())
        return result


def dev_answers(app: Path, bin_dir: Path) -> None:
    port = free_port()
    started = time.monotonic()
    server = subprocess.Popen(
        [str(bin_dir / "sluicegate"), "dev", "app.py", "--port", str(port)],
        cwd=app,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        while True:
            if server.poll() is not None:
                problem = server.stderr.read().decode()[-3000:] if server.stderr else ""
                raise SystemExit(f"[first-hour] FAILED: sluicegate dev exited: {problem}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/agents", timeout=1).read()
                break
            except OSError:
                if time.monotonic() - started > 30:
                    raise SystemExit(
                        "[first-hour] FAILED: sluicegate dev did not serve within 30 s"
                    ) from None
                time.sleep(0.1)
        up = time.monotonic() - started
        answer = post(
            f"http://127.0.0.1:{port}/api/agents/support/generate",
            {"messages": "My email is ada@example.com. Say hello.", "modelSettings": {"maxOutputTokens": 24}},
            timeout=120,
        )
        if not answer.get("text"):
            raise SystemExit(f"[first-hour] FAILED: the scaffold's agent gave no text: {answer}")
        say(f"ok: sluicegate dev served in {up:.1f} s and answered at {time.monotonic() - started:.1f} s")
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)


def main() -> int:
    began = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="sluicegate-first-hour-"))
    try:
        clone = work / "clone"
        fresh_copy(clone)
        say(f"a fresh copy in {clone}")
        # 1. README's two commands
        run([sys.executable, "run.py", "demo"], clone, timeout=900)
        run(
            [
                sys.executable,
                "run.py",
                "test",
                "tests/agent/test_demo_claims.py",
                "-q",
                "-p",
                "no:cacheprovider",
            ],
            clone,
            timeout=300,
        )
        bin_dir = clone / ".venv" / "bin"
        python = str(bin_dir / "python")
        env = user_env()
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
        # 2. the tutorial, step by step, as a reader copies it
        steps = work / "tutorial"
        steps.mkdir()
        for number, code in enumerate(python_blocks(clone / "docs" / "tutorial.md"), 1):
            script = steps / f"step{number}.py"
            script.write_text(code, encoding="utf-8")
            run([python, script.name], steps, timeout=120, env=env)
        # 3. a new app, its test, and `dev` serving it
        run([str(bin_dir / "sluicegate"), "init", "my-app"], work, timeout=60, env=env)
        app = work / "my-app"
        run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], app, timeout=120, env=env)
        dev_answers(app, bin_dir)
        # 4. human in the loop, two processes
        bank = work / "bank"
        bank.mkdir()
        page = clone / "docs" / "human-in-the-loop.md"
        (app_code,) = [code for code in python_blocks(page) if code.startswith("# bank.py")]
        (bank / "bank.py").write_text(app_code, encoding="utf-8")
        sluicegate = str(bin_dir / "sluicegate")
        waiting = run(
            [sluicegate, "run", "bank.py", "Move 100 to savings", "--thread", "t-1", "--resource", "ada"],
            bank,
            timeout=60,
            expect=4,
            env={**env, "NO_COLOR": "1"},
        )
        approve = next(
            line.split() for line in waiting.splitlines() if line.strip().startswith("sluicegate approve")
        )
        done = run(
            [sluicegate, "approve", "bank.py", approve[-1]], bank, timeout=60, env={**env, "NO_COLOR": "1"}
        )
        if "Done: 100 euros are on their way." not in done:
            raise SystemExit(f"[first-hour] FAILED: the approved run did not finish:\n{done}")
        say(f"the first hour took {time.monotonic() - began:.0f} s")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
