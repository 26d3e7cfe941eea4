"""Helpers for the LLM guardrail tests: each test drives a real `Agent` whose model and whose
guardrail's detector model are both `MockModel`s, the detector answering canned JSON verdicts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sluicegate.messages import Message
from sluicegate.models.base import CallOptions
from sluicegate.processors import Processor, ProcessorViolation
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.testing import MockModel, text_step

CLEAN: dict[str, Any] = {}


def verdict(answer: dict[str, Any] | str) -> list[dict[str, Any]]:
    """A detector step answering `answer` (a dict is sent as JSON, a str as it is)."""
    return text_step(answer if isinstance(answer, str) else json.dumps(answer))


def detector(*answers: dict[str, Any] | str | BaseException) -> MockModel:
    """A detector model answering one verdict per call, in order."""
    return MockModel([a if isinstance(a, BaseException) else verdict(a) for a in answers])


def routed_detector(route: Callable[[str], dict[str, Any] | str], calls: int = 50) -> MockModel:
    """A detector model whose answer depends on the prompt it is given (for stream tests,
    where the number of calls depends on chunking)."""

    def step(options: CallOptions) -> list[dict[str, Any]]:
        return verdict(route(detector_prompt(options)))

    return MockModel([step] * calls)


def detector_system(options: CallOptions) -> str:
    """The system message (instructions) of a detector call."""
    return str(options.prompt[0]["content"])


def detector_prompt(options: CallOptions) -> str:
    """The user text of a detector call."""
    return "".join(p["text"] for m in options.prompt if m["role"] == "user" for p in m["content"])


def user_texts(options: CallOptions) -> list[str]:
    """The user text parts the main model was sent."""
    return [
        p["text"] for m in options.prompt if m["role"] == "user" for p in m["content"] if p["type"] == "text"
    ]


class Capture(Processor):
    """An input processor that records the messages it sees (placed after a guardrail)."""

    id = "capture"

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[Message] = []

    def process_input(self, args: ProcessInputArgs) -> None:
        self.messages = [m.copy() for m in args.messages]


@pytest.fixture
def violations() -> Callable[[Processor], list[ProcessorViolation]]:
    """`watch(processor)` -> the list its `on_violation` appends to."""

    def watch(processor: Processor) -> list[ProcessorViolation]:
        seen: list[ProcessorViolation] = []
        processor.on_violation = seen.append
        return seen

    return watch


async def stream_text(output: Any) -> tuple[str, list[Any]]:
    """The text-delta text a stream delivered, and all its chunks."""
    chunks = [chunk async for chunk in output.full_stream]
    return "".join(c.payload.text for c in chunks if c.type == "text-delta"), chunks


def deltas_step(*texts: str) -> list[dict[str, Any]]:
    """A main-model step streaming exactly these text deltas."""
    step = text_step("".join(texts))
    deltas = [{"type": "text-delta", "id": "t1", "delta": t} for t in texts]
    return [*step[:2], *deltas, *step[3:]]
