"""`PIIDetector`'s option checks: the strategies and redaction methods it knows, and the
combinations it refuses, each with an error naming the option. Checked before
anything is built, so a mistyped option never yields a half-made detector."""

from __future__ import annotations

from typing import Any, Literal, get_args

from sluicegate.errors import ConfigurationError
from sluicegate.guardrails.guard_options import check_choice, check_threshold
from sluicegate.guardrails.pseudonyms import DEFAULT_MAX_PSEUDONYMS
from sluicegate.guardrails.recognizer import Recognizer
from sluicegate.guardrails.shown_arguments import DEFAULT_TOOL_ARGUMENTS

PIIStrategy = Literal["block", "warn", "filter", "redact", "pseudonymize"]
RedactionMethod = Literal["mask", "hash", "remove", "placeholder"]


def check_pii_options(
    *,
    strategy: str,
    redaction_method: str,
    threshold: float,
    tool_arguments: str,
    recognizer: object,
    restore_output: object,
    pseudonym_key: bytes | str | None,
    pseudonym_store: Any,
    max_pseudonyms: int,
) -> None:
    """Raise `ValueError` for an unknown strategy or redaction method or a threshold outside
    0..1; `ConfigurationError` for a recognizer without `analyze`, a non-bool `restore_output`,
    or an option that does not apply to `strategy` (pseudonym options without
    pseudonymization; rewritten tool arguments with it)."""
    if strategy == "pseudonymize" and tool_arguments != DEFAULT_TOOL_ARGUMENTS:
        raise ConfigurationError(
            "tool_arguments='rewritten' does not apply to strategy='pseudonymize': its tools "
            "receive the real values of the tokens in their arguments"
        )
    if recognizer is not None and not isinstance(recognizer, Recognizer):
        raise ConfigurationError(
            "recognizer must have an analyze(text) method (a PresidioRecognizer, for one), "
            f"got {recognizer!r}"
        )
    check_choice("strategy", strategy, get_args(PIIStrategy))
    if not isinstance(restore_output, bool):
        raise ConfigurationError(f"restore_output must be True or False, got {restore_output!r}")
    if strategy != "pseudonymize" and (
        restore_output
        or pseudonym_key is not None
        or pseudonym_store is not None
        or max_pseudonyms != DEFAULT_MAX_PSEUDONYMS
    ):
        raise ConfigurationError(
            "restore_output, pseudonym_key, pseudonym_store and max_pseudonyms only apply to "
            f"strategy='pseudonymize', not {strategy!r}"
        )
    check_choice("redaction_method", redaction_method, get_args(RedactionMethod))
    check_threshold(threshold)
