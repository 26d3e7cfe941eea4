"""`RegexFilter`'s options: the rules its presets and `rules` add up to, and the checks of its
other options, each failing with a `ValueError` that names the option. Checked before the
matcher is compiled, so a mistyped option costs nothing and never yields a half-made filter."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from sluicegate.guardrails.regex_rules import PRESETS, RegexRule

Strategy = Literal["block", "redact", "warn"]
Phase = Literal["input", "output", "all"]
Preset = Literal["pii", "secrets", "urls"]


def collect_rules(
    rules: Iterable[RegexRule | Mapping[str, Any]] | None, presets: Iterable[Preset] | None
) -> tuple[RegexRule, ...]:
    """The presets' rules, then the caller's own; at least one, each preset a known one."""
    collected: list[RegexRule] = []
    for preset in presets or ():
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
        collected.extend(PRESETS[preset])
    collected.extend(RegexRule.of(rule) for rule in rules or ())
    if not collected:
        raise ValueError("RegexFilter needs at least one rule or preset")
    return tuple(collected)


def check_regex_filter_options(
    *,
    strategy: object,
    phase: object,
    stream_carryover_size: int | None,
    max_value_chars: object,
    process_data_parts: object,
) -> None:
    """Raise `ValueError` for an unknown strategy or phase, a carry-over size or
    `max_value_chars` that is not a positive number of characters, or a non-bool
    `process_data_parts`."""
    if strategy not in ("block", "redact", "warn"):
        raise ValueError(f"strategy must be 'block', 'redact' or 'warn', got {strategy!r}")
    if phase not in ("input", "output", "all"):
        raise ValueError(f"phase must be 'input', 'output' or 'all', got {phase!r}")
    if stream_carryover_size is not None and stream_carryover_size < 1:
        raise ValueError("stream_carryover_size must be a positive number of characters")
    if isinstance(max_value_chars, bool) or not isinstance(max_value_chars, int) or max_value_chars < 1:
        raise ValueError(f"max_value_chars must be a positive number of characters, got {max_value_chars!r}")
    if not isinstance(process_data_parts, bool):
        raise ValueError(f"process_data_parts must be True or False, got {process_data_parts!r}")
