"""The Python blocks of docs/server.md run as written; those of docs/deploy.md compile (they
need PostgreSQL and Redis, which tests/server/test_scale_out.py exercises with the same code)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).parents[2] / "docs"


def python_blocks(name: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), flags=re.S)


def test_server_doc_blocks_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = python_blocks("server.md")
    assert len(blocks) == 5
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for block in blocks:
            exec(compile(block, "docs/server.md", "exec"), {"__name__": "docs"})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "Echo: hi" in out and "data: [DONE]" in out
    assert "1\n403\n404\n409\n401\n" in out  # the identity hook's example
    assert "tool-call-approval {'order': 'A-7'}\n1\n{'refunded': 'A-7'} finish\n404 runId\nTrue\n" in out


def test_deploy_doc_blocks_compile() -> None:
    blocks = python_blocks("deploy.md")
    assert blocks
    for block in blocks:
        compile(block, "docs/deploy.md", "exec")
