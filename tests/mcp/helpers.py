"""Helpers for the MCP tests: the fixture server's definition, child processes and open fds.

Not a conftest: tests/mcp is no package, so `import mcp` stays the SDK."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def fixture_server(**extra: Any) -> dict[str, Any]:
    """tests/mcp/servers.py over stdio."""
    return {"command": sys.executable, "args": ["-m", "tests.mcp.servers"], "cwd": str(ROOT), **extra}


def time_server(**extra: Any) -> dict[str, Any]:
    """`mcp-server-time` (PyPI), a server nobody here wrote."""
    return {"command": sys.executable, "args": ["-m", "mcp_server_time"], **extra}


def children(*parents: int) -> set[int]:
    """Live (not zombie) processes whose parent is one of `parents` (default: this process)."""
    wanted = set(parents or (os.getpid(),))
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) in wanted and fields[0] != "Z":
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    """Whether `pid` is a live (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"


def open_fds() -> int:
    """This process's open descriptors. A test compares them with `<=`: a leak adds some, while the
    collector may close another test's meanwhile (a socket it left to its finalizer)."""
    return len(os.listdir("/proc/self/fd"))
