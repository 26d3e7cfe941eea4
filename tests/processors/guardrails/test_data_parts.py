"""The built-in output guardrails check `data-*` chunks by default.

A tool writes a `data-*` chunk straight to the client; before, `PIIDetector` never looked at
one and `RegexFilter` only with `process_data_parts=True`, so a secret in a tool's progress
data reached the client past every guardrail. User processors keep Mastra's default (off).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import ConfigurationError
from sluicegate.guardrails.data_parts import OWN_DATA_TYPES, check_data
from sluicegate.guardrails.judgement import Judgement
from sluicegate.guardrails.spans import Span
from sluicegate.processors import (
    ModerationProcessor,
    PIIDetector,
    Processor,
    RegexFilter,
    SystemPromptScrubber,
)
from sluicegate.stream.chunk import Chunk
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool

from .conftest import CLEAN, routed_detector

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
EMAIL = "john.doe@example.com"
SYSTEM = "You are Orion, the billing assistant of Acme; never discuss refunds above fifty dollars."


def data_tool(*payloads: Any) -> Any:
    """A tool writing one `data-progress` chunk per payload to the client, then answering."""

    async def run(_: Any, context: ToolContext) -> str:
        for payload in payloads:
            await context.writer.custom({"type": "data-progress", "data": payload})
        return "ok"

    return create_tool(id="work", description="works", execute=run)


async def data_chunks(
    guard: Processor, *payloads: Any, instructions: str = ""
) -> tuple[list[Chunk], list[Chunk]]:
    """(the data chunks the client received, every chunk) for a run whose tool writes `payloads`."""
    model = MockModel([tool_call_step(("c1", "work", {})), text_step("done")])
    agent = Agent(
        name="a",
        instructions=instructions,
        model=model,
        tools=[data_tool(*payloads)],
        output_processors=[guard],
    )
    chunks = [chunk async for chunk in (await agent.stream("go")).full_stream]
    return [c for c in chunks if c.type.startswith("data-")], chunks


NESTED = {"step": 2, "found": {"rows": ["fine", f"key {AWS_KEY}"]}, "raw": json.dumps({"token": AWS_KEY})}


# ---------------------------------------------------------------- RegexFilter


async def test_regex_filter_redacts_nested_strings_of_data_chunks_by_default() -> None:
    guard = RegexFilter(presets=["secrets"], strategy="redact")
    assert guard.process_data_parts is True
    received, _ = await data_chunks(guard, NESTED)
    assert len(received) == 1
    data = received[0].data
    assert AWS_KEY not in json.dumps(data)
    assert data["step"] == 2 and data["found"]["rows"][0] == "fine"


async def test_regex_filter_blocks_a_data_chunk() -> None:
    received, chunks = await data_chunks(RegexFilter(presets=["secrets"]), NESTED)
    assert received == [] and chunks[-1].type == "tripwire"


async def test_regex_filter_opt_out_leaves_data_chunks_alone() -> None:
    guard = RegexFilter(presets=["secrets"], strategy="redact", process_data_parts=False)
    received, _ = await data_chunks(guard, NESTED)
    assert received[0].data == NESTED


def test_user_processors_keep_mastras_default() -> None:
    assert Processor.process_data_parts is False


@pytest.mark.parametrize(
    "make",
    [
        lambda flag: RegexFilter(presets=["secrets"], process_data_parts=flag),
        lambda flag: PIIDetector(process_data_parts=flag),
        lambda flag: ModerationProcessor(model=MockModel([]), process_data_parts=flag),
        lambda flag: SystemPromptScrubber(process_data_parts=flag),
    ],
)
def test_the_option_must_be_a_bool(make: Any) -> None:
    with pytest.raises((ValueError, ConfigurationError), match="process_data_parts"):
        make("yes")


# ---------------------------------------------------------------- PIIDetector


async def test_pii_detector_offline_redacts_data_chunks() -> None:
    received, _ = await data_chunks(
        PIIDetector(redaction_method="placeholder"), {"note": f"mail {EMAIL}", **NESTED}
    )
    dumped = json.dumps(received[0].data)
    assert EMAIL not in dumped and AWS_KEY not in dumped and "[EMAIL]" in dumped


async def test_pii_detector_offline_block_stops_at_a_data_chunk() -> None:
    received, chunks = await data_chunks(PIIDetector(strategy="block"), {"note": f"mail {EMAIL}"})
    assert received == [] and chunks[-1].type == "tripwire"


def email_found(prompt: str) -> dict[str, Any]:
    if EMAIL not in prompt:
        return CLEAN
    return {"detections": [{"type": "email", "value": EMAIL, "confidence": 0.9}]}


async def test_pii_detector_with_a_model_redacts_data_chunks() -> None:
    judge = routed_detector(email_found)
    guard = PIIDetector(model=judge, redaction_method="placeholder")
    received, _ = await data_chunks(guard, {"to": [EMAIL, "ops"], "n": 3})
    assert received[0].data == {"to": ["[EMAIL]", "ops"], "n": 3}


async def test_pii_detector_filter_drops_the_data_chunk_and_opt_out_keeps_it() -> None:
    dropped, chunks = await data_chunks(
        PIIDetector(model=routed_detector(email_found), strategy="filter"), {"to": EMAIL}
    )
    assert dropped == [] and chunks[-1].type == "finish"
    kept, _ = await data_chunks(
        PIIDetector(model=routed_detector(email_found), strategy="filter", process_data_parts=False),
        {"to": EMAIL},
    )
    assert kept[0].data == {"to": EMAIL}


async def test_repeated_data_is_judged_once_and_numbers_not_at_all() -> None:
    judge = routed_detector(email_found)
    guard = PIIDetector(model=judge, redaction_method="placeholder")
    received, _ = await data_chunks(guard, {"status": "indexing"}, {"status": "indexing"}, {"percent": 50})
    assert [c.data for c in received] == [{"status": "indexing"}, {"status": "indexing"}, {"percent": 50}]
    judged_data = [c for c in judge.calls if "indexing" in json.dumps(c.prompt)]
    assert len(judged_data) == 1


# ---------------------------------------------------------------- Moderation and SystemPromptScrubber


def hateful(prompt: str) -> dict[str, Any]:
    if "vile" not in prompt:
        return {"category_scores": [], "reason": None}
    return {"category_scores": [{"category": "hate", "score": 0.9}], "reason": "slur"}


async def test_moderation_filters_a_data_chunk() -> None:
    guard = ModerationProcessor(model=routed_detector(hateful), strategy="filter")
    received, chunks = await data_chunks(guard, {"quote": "a vile thing"}, {"quote": "a kind thing"})
    assert [c.data for c in received] == [{"quote": "a kind thing"}]
    assert chunks[-1].type == "finish"


async def test_moderation_blocks_at_a_data_chunk() -> None:
    received, chunks = await data_chunks(ModerationProcessor(model=routed_detector(hateful)), {"q": "vile"})
    assert received == [] and chunks[-1].type == "tripwire"


async def test_system_prompt_scrubber_redacts_a_data_chunk_quoting_the_system_prompt() -> None:
    leak = {"echo": f"my rules: {SYSTEM}"}
    received, _ = await data_chunks(
        SystemPromptScrubber(redaction_method="placeholder"), leak, instructions=SYSTEM
    )
    assert "billing assistant" not in json.dumps(received[0].data)
    assert received[0].data["echo"].startswith("my rules: [SYSTEM_PROMPT]")


# ---------------------------------------------------------------- the shared check


class CountingGuard:
    """A guardrail double: judges windows by looking for `needle`, redacting it."""

    def __init__(self, needle: str, window_chars: int = 40, overlap_chars: int = 10) -> None:
        self.needle = needle
        self.window_chars = window_chars
        self.overlap_chars = overlap_chars
        self.windows: list[str] = []

    async def judge_window(self, text: str, args: Any) -> Judgement:
        self.windows.append(text)
        at = text.find(self.needle)
        if at < 0:
            return Judgement()
        return Judgement(
            flagged=True, spans=[Span(at, at + len(self.needle), "x")], replace=lambda value, kind: "#"
        )


class Args:
    def __init__(self) -> None:
        self.state: dict[str, Any] = {}


async def test_long_data_is_judged_in_overlapping_windows_covering_everything() -> None:
    filler = "lorem ipsum " * 20
    data = {"a": filler, "b": [filler + "NEEDLE" + filler]}
    guard = CountingGuard("NEEDLE")
    checked = await check_data(guard, Args(), Chunk("data-x", "r", None, data))
    assert checked is not None
    assert "NEEDLE" not in json.dumps(checked.data) and checked.data["b"][0] == filler + "#" + filler
    text = filler + "\n" + filler + "NEEDLE" + filler
    assert len(guard.windows) == -(-(len(text) - 10) // 30)  # ceil((N - overlap) / step)
    assert all(len(w) <= 40 for w in guard.windows)


async def test_own_data_chunks_are_not_judged() -> None:
    from sluicegate.guardrails.data_parts import guard_data_part

    guard = CountingGuard("x")
    args = Args()
    for kind in sorted(OWN_DATA_TYPES):
        part = Chunk(kind, "r", None, {"reason": "x"})
        args.part = part  # type: ignore[attr-defined]

        async def hook(_: Any, __: Any) -> Chunk:
            raise AssertionError("not reached")

        assert await guard_data_part(guard, args, hook) is part
    assert guard.windows == []
