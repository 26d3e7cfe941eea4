"""A one-line progress bar on a terminal (stderr), silent when the stream is not a TTY."""

from __future__ import annotations

import sys
import time
from typing import TextIO

_WIDTH = 30


class ProgressBar:
    def __init__(self, stream: TextIO | None = None, *, label: str = "eval") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.label = label
        self.started = time.monotonic()
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return  # redraw at most ten times a second
        self._last = now
        filled = _WIDTH * done // max(total, 1)
        rate = done / max(now - self.started, 1e-9)
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (_WIDTH - filled)}] {done}/{total} {rate:.0f} texts/s"
        )
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
