"""Helpers for the provider-error processor tests: a processor that records what was persisted."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate.processors import Processor
from sluicegate.processors.args import ProcessOutputResultArgs


class PersistedRecorder(Processor):
    """Captures the message list as the run ends (what memory would save)."""

    id = "persisted-recorder"

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[dict[str, Any]] = []

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        self.messages = [m.to_dict() for m in args.message_list.get.all.db()]


@pytest.fixture
def recorder() -> PersistedRecorder:
    return PersistedRecorder()


def prompt_parts(prompt: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """Every content part of `kind` in a V2 prompt."""
    return [
        p for m in prompt if isinstance(m.get("content"), list) for p in m["content"] if p.get("type") == kind
    ]


def stored_parts(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [p for m in messages for p in m["content"]["parts"] if p.get("type") == kind]
