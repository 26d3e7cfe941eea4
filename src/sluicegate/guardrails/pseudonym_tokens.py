"""Tokens in text: giving each detected value its pseudonym token as a span replacement, and the
tail a restoring stream holds back while it may still grow into a token (see
`guardrails.pseudonyms` for the mapping itself)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluicegate.guardrails.pseudonyms import PseudonymMap, token_label
from sluicegate.stream.chunk import Chunk, text_delta
from sluicegate.tracing.findings import redacted

HELD = "restore_held"
HELD_AT = "restore_held_at"


def release_held(state: dict[str, Any]) -> list[Chunk]:
    """The text held back by a restoring stream, as it is (it never grew into a token)."""
    held = state.pop(HELD, "")
    if not held:
        return []
    run_id, text_id = state[HELD_AT]
    return [text_delta(run_id, text_id, held)]


def tokens_of(mapping: PseudonymMap) -> Callable[[str, str], str]:
    """A span replacement giving each value its token (a detected value with blanks around it
    keeps them); a value without one (the mapping is full: `max_pseudonyms`) becomes its
    unnumbered label (`<EMAIL>`), redacted for good rather than passed on."""

    def replace(value: str, kind: str) -> str:
        redacted(kind)
        token = mapping.token(value)
        if token is not None:
            return token
        stripped = value.strip()
        token = mapping.token(stripped) if stripped else None
        if token is None:
            token = f"<{token_label(kind)}>"
        return value.replace(stripped, token, 1) if stripped else value

    return replace
