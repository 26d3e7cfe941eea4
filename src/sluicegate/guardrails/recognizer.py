"""What `PIIDetector(recognizer=...)` accepts: an offline recognizer beside the pattern pass,
for kinds that patterns cannot find (names, places, dates). It reports spans of the text it was
given; the detector judges windows of the stream with it, so hold-back and redaction work as for
the pattern pass (see `guardrails.presidio` for the one sluicegate ships)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Recognized:
    """One value a recognizer found: `text[start:end]`, of sluicegate detection `type` (`name`,
    `location`, `date`, ...), from the recognizer's own `entity` (`PERSON`) with its `score`."""

    start: int
    end: int
    type: str
    entity: str
    score: float


@runtime_checkable
class Recognizer(Protocol):
    """An offline recognizer: `analyze(text)` is CPU-bound and blocking (PIIDetector runs it in
    a worker thread, so the event loop and the stream stay responsive)."""

    def analyze(self, text: str) -> Sequence[Recognized]: ...
