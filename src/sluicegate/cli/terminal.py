"""Terminal output shared by the commands: colour only on a terminal, and never with NO_COLOR."""

from __future__ import annotations

import os
import sys


def color(text: str, code: str) -> str:
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        return f"\033[{code}m{text}\033[0m"
    return text
