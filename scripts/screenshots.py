"""Refresh the studio screenshots in docs/ (docs/studio-*.png).

The screenshots are taken by the studio's Chromium tests at the moments they check, so a picture
in the docs always shows behaviour a test asserts. This runs those tests with
SLUICEGATE_SCREENSHOTS=docs and fails when one of the expected pictures was not written.

    python scripts/screenshots.py            # from the project root, with the venv's python

Needs the dev dependencies (playwright) and Debian's chromium (`apt-get install chromium`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = [
    "tests/server/test_studio.py",
    "tests/server/test_studio_approvals.py",
    "tests/server/test_studio_views.py",
]
EXPECTED = [
    "agents",
    "chat",
    "memory",
    "processors",
    "approvals",
    "chat-history",
    "overrides",
    "tools",
    "workflow",
    "narrow",
]


def main() -> int:
    started = time.time()
    env = {**os.environ, "SLUICEGATE_SCREENSHOTS": "docs", "SLUICEGATE_REQUIRE_SERVICES": "1"}
    command = [sys.executable, "-m", "pytest", "-q", *TESTS]
    if subprocess.run(command, cwd=ROOT, env=env, check=False).returncode != 0:
        print("screenshots: the studio tests failed; docs/ may be partly refreshed", file=sys.stderr)
        return 1
    stale = [
        name
        for name in EXPECTED
        if not (path := ROOT / "docs" / f"studio-{name}.png").exists() or path.stat().st_mtime < started
    ]
    if stale:
        print(f"screenshots: not written: {', '.join(stale)}", file=sys.stderr)
        return 1
    for name in EXPECTED:
        path = ROOT / "docs" / f"studio-{name}.png"
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
