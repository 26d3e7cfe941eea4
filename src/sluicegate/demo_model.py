"""The model the demo runs on: a hosted one when a key is set, else the embedded local model."""

from __future__ import annotations

import os

from sluicegate.models.base import LanguageModel


def demo_model() -> LanguageModel | str:
    """`"openai/gpt-5-mini"` with OPENAI_API_KEY, `"anthropic/claude-haiku-4-5"` with
    ANTHROPIC_API_KEY, otherwise `"local/smollm2-135m"` (offline, needs the `local` extra)."""
    if os.environ.get("OPENAI_API_KEY"):
        return "openai/gpt-5-mini"
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic/claude-haiku-4-5"
    return "local/smollm2-135m"
