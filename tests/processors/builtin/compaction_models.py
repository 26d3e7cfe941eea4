"""Scripted models for the compaction tests and benchmark: an agent model that looks a thing up
on every user turn and then answers, and a summarizer that counts its calls and keeps the
transcripts it was given."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from sluicegate.models.base import CallOptions, GenerateResult, StreamResult
from sluicegate.processors.builtin.prompt_tokens import TOKENS_PER_CONVERSATION, PartTokenCounter
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tokens import resolve_encoding


async def _replay(parts: list[Any]) -> AsyncIterator[Any]:
    for part in parts:
        yield part


class LookupModel:
    """Calls `lookup` after each user message, answers after each result; records every prompt's
    token count (as the compactor counts it)."""

    specification_version = "v2"
    provider = "mock-provider"
    model_id = "lookup-model"

    def __init__(self) -> None:
        self.prompt_tokens: list[int] = []
        self.prompts: list[list[dict[str, Any]]] = []
        self._counter = PartTokenCounter(resolve_encoding(None, None))

    def _step(self, options: CallOptions) -> list[Any]:
        prompt = options.prompt
        self.prompts.append(prompt)
        self.prompt_tokens.append(
            TOKENS_PER_CONVERSATION + sum(self._counter.prompt_message(m) for m in prompt)
        )
        last = prompt[-1]
        if last["role"] == "user":
            turn = len(self.prompts)
            return tool_call_step((f"call-{turn}", "lookup", {"query": f"topic {turn}"}))
        return text_step("Here is what I found.")

    async def do_stream(self, options: CallOptions) -> StreamResult:
        return StreamResult(stream=_replay(self._step(options)))

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        raise NotImplementedError("the agent streams")


class Summarizer:
    """A summarizing model: answers `{"summary": ...}`, counts its calls, keeps what it read."""

    specification_version = "v2"
    provider = "mock-provider"
    model_id = "summarizer"

    def __init__(self, summary: str = "The user asked about many topics; lookups were made.") -> None:
        self.summary = summary
        self.transcripts: list[str] = []

    @property
    def calls(self) -> int:
        return len(self.transcripts)

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        user = options.prompt[-1]["content"][0]["text"]
        self.transcripts.append(user)
        text = json.dumps({"summary": f"{self.summary} (compaction {self.calls})"})
        return GenerateResult(
            content=[{"type": "text", "text": text}],
            finish_reason="stop",
            usage={"inputTokens": 10, "outputTokens": 10, "totalTokens": 20},
        )

    async def do_stream(self, options: CallOptions) -> StreamResult:
        raise NotImplementedError("the summarizer is asked with do_generate")


def lookup_result(turn: int, size: int = 3000) -> str:
    """A large tool result: the bulk of the conversation."""
    line = f"result line for topic {turn}: lorem ipsum dolor sit amet, consectetur adipiscing elit. "
    return (line * (size // len(line) + 1))[:size]
