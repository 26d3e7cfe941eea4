"""The options every LLM guardrail checks alike: when it asks its model (`llm`), what a failed
detector call means (`error_strategy`), whether it may run alongside the model call
(`run_in_parallel`), and the allowed values of its other options."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

ErrorStrategy = Literal["block", "allow", "fallback"]
LLMMode = Literal["always", "when-unsure", "never"]
"""When a guardrail with a deterministic pass asks its model: `"always"` (the model decides),
`"when-unsure"` (only when the deterministic pass found nothing) or `"never"` (offline)."""
ERROR_STRATEGIES: tuple[str, ...] = ("block", "allow", "fallback")


def resolve_llm(label: str, model: Any, llm: str | None) -> LLMMode:
    """`llm`, checked: `"never"` by default without a `model`, `"always"` with one."""
    if llm is None:
        return "never" if model is None else "always"
    check_choice("llm", llm, ("always", "when-unsure", "never"))
    if llm != "never" and model is None:
        raise ValueError(
            f"{label} with llm={llm!r} needs a `model`; use llm='never' for the offline pass only"
        )
    return llm  # type: ignore[return-value]


def describe_detection(subject: str, llm: LLMMode, offline: str, phases: str) -> str:
    """A guardrail's one-line description that says who decides: the studio shows it, and "by
    an LLM" would be wrong for a detector that never calls one."""
    how = {
        "always": "by an LLM",
        "when-unsure": f"by {offline}, asking an LLM only when they find nothing",
        "never": f"by {offline} (offline, no model call)",
    }[llm]
    return f"{subject} {how}, for {phases}."


def default_error_strategy(strategy: str, error_strategy: str | None) -> ErrorStrategy:
    """`error_strategy`, checked; by default `"block"` for guardrails that block or redact
    (fail closed) and `"allow"` for those that only warn or filter."""
    if error_strategy is None:
        return "block" if strategy in ("block", "redact", "rewrite") else "allow"
    check_choice("error_strategy", error_strategy, ERROR_STRATEGIES)
    return error_strategy  # type: ignore[return-value]


def check_parallel(strategy: str, run_in_parallel: bool) -> bool:
    """`run_in_parallel`, checked: only a guardrail that blocks or warns (a check only) may run
    concurrently with the first model call."""
    if run_in_parallel and strategy not in ("block", "warn"):
        raise ValueError(f"run_in_parallel needs strategy 'block' or 'warn' (a check only), got {strategy!r}")
    return run_in_parallel


class ChecksInputOnly:
    """Mix-in for guardrails whose block and warn strategies only check the input."""

    strategy: str

    @property
    def checks_input_only(self) -> bool:
        """Blocking or warning never changes the input, so this guard may run concurrently with
        other checks (see `input_guards`)."""
        return self.strategy in ("block", "warn")


def check_choice(option: str, value: Any, choices: Sequence[str]) -> None:
    """Raise ValueError unless `value` is one of `choices` (a guardrail option's allowed values)."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}"
        raise ValueError(f"{option} must be {listed}, got {value!r}")


def check_threshold(threshold: float) -> None:
    if not 0 <= threshold <= 1:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold!r}")
