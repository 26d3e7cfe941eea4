"""Starting a throwaway `redis-server` on 127.0.0.1 for the cache tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRE_SERVICES = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"


def _missing(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (SLUICEGATE_REQUIRE_SERVICES=1)")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class RedisServer:
    """A `redis-server` process this test session started."""

    process: subprocess.Popen[bytes]
    port: int
    directory: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        shutil.rmtree(self.directory, ignore_errors=True)


def start_redis() -> RedisServer:
    """Start a throwaway `redis-server` on a free port; skip (or fail in CI) without one."""
    binary = shutil.which("redis-server")
    if binary is None:
        _missing("redis-server is not installed (apt-get install redis-server)")
    assert binary is not None
    directory = Path(tempfile.mkdtemp(prefix="sluicegate-redis-"))
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(directory),
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = RedisServer(process, port, directory)
    deadline = time.monotonic() + 10
    while not _ping(port):
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            _missing(f"redis-server did not start on 127.0.0.1:{port}")
        time.sleep(0.02)
    return server
