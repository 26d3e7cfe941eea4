"""The deterministic first passes of the LLM guardrails: no model call, no network.

- prompt injection: a curated set of phrasings that attacks keep reusing (`injection_scores`);
- language: `lingua-language-detector`, offline n-gram models (`detect_language`);
- system-prompt leaks: word n-grams the answer shares with the actual system prompt
  (`shared_spans`).

Each is exact about what it finds and silent about what it cannot know, which is what the
guardrails' `llm="when-unsure"` mode relies on.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from sluicegate.errors import MissingExtraError

_FLAGS = re.IGNORECASE | re.DOTALL
_ANY = r"(?:all|any|every|the|your|my|these|those|previous|prior|above|earlier|preceding|\s)*"

INJECTION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, _FLAGS))
    for kind, pattern in (
        (
            "injection",
            rf"\b(?:ignore|disregard|forget|skip|override|bypass)\b{_ANY}"
            r"(?:instructions?|prompts?|rules|directions|guidelines|context|messages?)\b",
        ),
        ("injection", r"\bnew (?:instructions|rules|task)\s*:"),
        ("injection", r"<\s*/?\s*(?:system|im_start|im_end|instructions?)\s*>|\[/?INST\]|<<SYS>>"),
        ("system-override", r"\b(?:system|developer|admin|root)\s*(?:prompt|message|mode|override)\s*:"),
        ("system-override", r"\byou are now (?:in )?(?:developer|debug|admin|god|unrestricted) mode\b"),
        (
            "jailbreak",
            r"\b(?:DAN|do anything now|jailbreak(?:ed)?|no (?:rules|restrictions|limits|filters) apply)\b",
        ),
        (
            "jailbreak",
            r"\bpretend (?:that )?you (?:have|are under) no (?:rules|restrictions|guidelines|filters)\b",
        ),
        (
            "role-manipulation",
            r"\b(?:from now on|henceforth),? you (?:are|will be|act as)\b|\byou are no longer (?:an? )?\w+",
        ),
        (
            "data-exfiltration",
            r"\b(?:reveal|print|show|repeat|output|leak|dump)\b[^.\n]{0,40}"
            r"\b(?:system prompt|hidden (?:instructions|prompt)|initial instructions|your instructions)\b",
        ),
        (
            "tool-exfiltration",
            r"\b(?:send|post|upload|forward|email|exfiltrate)\b[^.\n]{0,60}"
            r"(?:https?://|\bto (?:this|the following) (?:url|address|endpoint|webhook)\b)",
        ),
    )
)
PATTERN_SCORE = 0.95
"""The score a pattern match gets: these phrasings have no innocent reading in user input."""


def injection_scores(text: str, types: tuple[str, ...]) -> list[tuple[str, float]]:
    """Each of `types` some curated pattern finds in `text`, with `PATTERN_SCORE`."""
    found: dict[str, float] = {}
    for kind, pattern in INJECTION_PATTERNS:
        if kind in types and kind not in found and pattern.search(text):
            found[kind] = PATTERN_SCORE
    return list(found.items())


# ---------------------------------------------------------------------- language

_detector: Any = None
_detector_lock = threading.Lock()


def _language_detector() -> Any:
    """One lingua detector per process, built on first use (about a second: its models load
    lazily, in lingua's low-accuracy mode, which is fast and exact enough beyond a few words)."""
    global _detector
    if _detector is None:
        with _detector_lock:
            if _detector is None:
                try:
                    from lingua import LanguageDetectorBuilder
                except ImportError as exc:
                    raise MissingExtraError(
                        "lingua", extra="language", feature="LanguageDetector's offline pass"
                    ) from exc
                _detector = (
                    LanguageDetectorBuilder.from_all_spoken_languages().with_low_accuracy_mode().build()
                )
    return _detector


def detect_language(text: str) -> tuple[str, float] | None:
    """(ISO 639-1 code, confidence) of `text`, or None when lingua cannot tell."""
    values = _language_detector().compute_language_confidence_values(text)
    if not values or values[0].value <= 0:
        return None
    best = values[0]
    return best.language.iso_code_639_1.name.lower(), float(best.value)


# ---------------------------------------------------------------------- system prompt leaks

_WORD = re.compile(r"\w+", re.UNICODE)


def shared_spans(text: str, reference: str, n: int) -> list[tuple[int, int]]:
    """Spans of `text` made of runs of `n` or more consecutive words that also appear, in the
    same order, in `reference` (case-insensitive): a verbatim or near-verbatim quote."""
    if not reference or n < 1:
        return []
    ref_words = [w.lower() for w in _WORD.findall(reference)]
    grams = {tuple(ref_words[i : i + n]) for i in range(len(ref_words) - n + 1)}
    if not grams:
        return []
    words = list(_WORD.finditer(text))
    lowered = [w.group().lower() for w in words]
    spans: list[tuple[int, int]] = []
    for i in range(len(words) - n + 1):
        if tuple(lowered[i : i + n]) in grams:
            start, end = words[i].start(), words[i + n - 1].end()
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            else:
                spans.append((start, end))
    return spans
