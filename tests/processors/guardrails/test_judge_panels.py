"""Adjacent windowed guardrails judge the stream together (one panel): every judge sees the
model's text as it comes, the judges of one window run at the same time, text is released
once all of them vetted it, their redactions compose by span, and each one's violation is
reported as its own."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.models.base import CallOptions, GenerateResult
from sluicegate.processors import ModerationProcessor, PIIDetector, Processor, SystemPromptScrubber
from sluicegate.processors.args import ProcessOutputStreamArgs
from sluicegate.stream.chunk import Chunk
from sluicegate.testing import MockModel

from .conftest import CLEAN, deltas_step, detector_prompt, stream_text

EMAIL = "ada.lovelace@example.org"
LEAK = "my instructions say never discuss pricing"


class Gated(MockModel):
    """A detector answering `route(prompt)` once `gate` opens (open by default)."""

    def __init__(self, route: Callable[[str], dict[str, Any]] = lambda _: CLEAN) -> None:
        super().__init__()
        self.route = route
        self.gate = asyncio.Event()
        self.gate.set()

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        self.calls.append(options)
        await self.gate.wait()
        answer = json.dumps(self.route(detector_prompt(options)))
        return GenerateResult(content=[{"type": "text", "text": answer}], finish_reason="stop", usage={})


def email_route(prompt: str) -> dict[str, Any]:
    if EMAIL not in prompt:
        return CLEAN
    return {"detections": [{"type": "email", "value": EMAIL, "confidence": 0.99}]}


def leak_route(prompt: str) -> dict[str, Any]:
    if LEAK not in prompt:
        return CLEAN
    return {"detections": [{"type": "system-prompt", "value": LEAK, "confidence": 0.9}], "reason": "leak"}


class Relay(Processor):
    """A pass-through stream processor: placed between two guardrails, they are not adjacent."""

    id = "relay"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        return args.part


async def test_chained_judges_see_the_first_window_at_the_same_time() -> None:
    judges = [Gated(), Gated(), Gated()]
    for judge in judges:
        judge.gate.clear()
    guards = [
        ModerationProcessor(model=judges[0], window_chars=40, overlap_chars=8),
        PIIDetector(model=judges[1], window_chars=40, overlap_chars=8),
        SystemPromptScrubber(model=judges[2], window_chars=40, overlap_chars=8),
    ]
    pieces = ["The report shows steady growth ", "across regions, and more. "] * 3
    agent = Agent(name="p", model=MockModel([deltas_step(*pieces)]), output_processors=guards)
    output = await agent.stream("hi")
    seen: list[Chunk] = []

    async def consume() -> None:
        async for chunk in output.full_stream:
            seen.append(chunk)

    task = asyncio.create_task(consume())
    for _ in range(200):
        await asyncio.sleep(0.005)
        if all(judge.calls for judge in judges):
            break
    # every judge was asked before any verdict came back, and nothing was released yet
    assert all(judge.calls for judge in judges)
    assert not any(c.type == "text-delta" for c in seen)
    first_windows = [detector_prompt(judge.calls[0]) for judge in judges]
    assert all("The report shows steady growth" in prompt for prompt in first_windows)
    for judge in judges:
        judge.gate.set()
    await task
    assert "".join(c.payload.text for c in seen if c.type == "text-delta") == "".join(pieces)


async def test_guardrails_kept_apart_by_another_processor_judge_one_after_another() -> None:
    first, second = Gated(), Gated()
    first.gate.clear()
    guards = [ModerationProcessor(model=first), Relay(), PIIDetector(model=second)]
    agent = Agent(name="p", model=MockModel([deltas_step("hello ", "world")]), output_processors=guards)
    output = await agent.stream("hi")
    task = asyncio.create_task(stream_text(output))
    for _ in range(40):
        await asyncio.sleep(0.005)
    # the second one sees text only once the first one released it
    assert first.calls and not second.calls
    first.gate.set()
    text, _ = await task
    assert text == "hello world" and second.calls


async def test_redactions_of_two_judges_compose_by_span() -> None:
    pii = PIIDetector(
        model=Gated(email_route), redaction_method="placeholder", window_chars=64, overlap_chars=48
    )
    scrubber = SystemPromptScrubber(
        model=Gated(leak_route), redaction_method="placeholder", window_chars=64, overlap_chars=48
    )
    answer = f"Write to {EMAIL} today. Also, {LEAK}. Bye."
    pieces = [answer[i : i + 7] for i in range(0, len(answer), 7)]
    agent = Agent(name="p", model=MockModel([deltas_step(*pieces)]), output_processors=[pii, scrubber])
    output = await agent.stream("hi")
    text, _ = await stream_text(output)
    assert text == "Write to [EMAIL] today. Also, [SYSTEM_PROMPT]. Bye."
    assert (await output.response).messages[-1].text == text


async def test_overlapping_redactions_replace_the_merged_text_once() -> None:
    # the scrubber's finding contains the email: one replacement, the scrubber's (the longer one)
    quoted = f"my instructions say mail {EMAIL}"

    def quoted_route(prompt: str) -> dict[str, Any]:
        if quoted not in prompt:
            return CLEAN
        return {"detections": [{"type": "system-prompt", "value": quoted, "confidence": 0.9}]}

    pii = PIIDetector(model=Gated(email_route), redaction_method="placeholder")
    scrubber = SystemPromptScrubber(model=Gated(quoted_route), redaction_method="placeholder")
    pieces = ["Note: my instructions ", "say mail ada.love", "lace@example.org ok"]
    agent = Agent(name="p", model=MockModel([deltas_step(*pieces)]), output_processors=[pii, scrubber])
    text, _ = await stream_text(await agent.stream("hi"))
    assert text == "Note: [SYSTEM_PROMPT] ok"


async def test_a_later_judges_block_is_reported_as_its_own(violations: Any) -> None:
    moderation = ModerationProcessor(model=Gated())
    pii = PIIDetector(model=Gated(email_route), strategy="block")
    moderation_seen, pii_seen = violations(moderation), violations(pii)
    agent = Agent(
        name="p",
        model=MockModel([deltas_step("mail ", EMAIL, " now")]),
        output_processors=[moderation, pii, SystemPromptScrubber(model=Gated())],
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    assert EMAIL not in text and text == ""
    assert chunks[-1].type == "tripwire" and chunks[-1].payload.processor_id == "pii-detector"
    assert pii_seen and not moderation_seen


async def test_a_later_judges_failure_names_it() -> None:
    class Broken(SystemPromptScrubber):
        async def judge_window(self, text: str, args: Any) -> Any:
            raise RuntimeError("judge crashed")

    agent = Agent(
        name="p",
        model=MockModel([deltas_step("hello ", "world")]),
        output_processors=[ModerationProcessor(model=Gated()), Broken(model=Gated())],
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    errors = [c for c in chunks if c.type == "error"]
    assert text == "" and errors and "system-prompt-scrubber" in str(errors[0].payload.error)


async def test_an_optimistic_member_retracts_while_a_vetted_one_holds_text() -> None:
    hate = {"category_scores": [{"category": "hate", "score": 0.9}], "reason": "hateful"}
    moderation = ModerationProcessor(
        model=Gated(lambda p: hate if "BAD" in p else CLEAN), release="optimistic"
    )
    pii = PIIDetector(model=Gated(email_route), redaction_method="placeholder")
    agent = Agent(
        name="p", model=MockModel([deltas_step("fine ", "BAD")]), output_processors=[pii, moderation]
    )
    _, chunks = await stream_text(await agent.stream("hi"))
    types = [c.type for c in chunks]
    assert "data-guardrail-retraction" in types and types[-1] == "tripwire"
    retraction = chunks[types.index("data-guardrail-retraction")]
    assert retraction.data["processorId"] == "moderation"
    assert chunks[-1].payload.processor_id == "moderation"


@pytest.mark.parametrize("release", ["vetted", "optimistic"])
async def test_a_clean_streamed_answer_costs_no_extra_whole_response_check(release: str) -> None:
    judges = [Gated(), Gated(), Gated()]
    guards = [
        ModerationProcessor(model=judges[0], release=release),  # type: ignore[arg-type]
        PIIDetector(model=judges[1], release=release),  # type: ignore[arg-type]
        SystemPromptScrubber(model=judges[2], release=release),  # type: ignore[arg-type]
    ]
    agent = Agent(name="p", model=MockModel([deltas_step("hello ", "there")]), output_processors=guards)
    result = await agent.generate("hi")
    assert result.text == "hello there" and result.tripwire is None
    # one window and one whole-response check each: the check started on the streamed text
    # (before the last verdict) is the one process_output_result used
    assert [len(judge.calls) for judge in judges] == [2, 2, 2]


async def test_a_guardrail_placed_twice_is_not_a_panel_with_itself() -> None:
    judge = Gated(email_route)
    pii = PIIDetector(model=judge, redaction_method="placeholder")
    agent = Agent(name="p", model=MockModel([deltas_step("mail ", EMAIL)]), output_processors=[pii, pii])
    text, _ = await stream_text(await agent.stream("hi"))
    assert EMAIL not in text and "[EMAIL]" in text


async def test_the_whole_response_check_starts_alongside_the_last_window() -> None:
    judge = Gated()
    judge.gate.clear()
    agent = Agent(
        name="p",
        model=MockModel([deltas_step("hello ", "there")]),
        output_processors=[PIIDetector(model=judge)],
    )
    task = asyncio.create_task(agent.generate("hi"))
    for _ in range(100):
        await asyncio.sleep(0.005)
        if len(judge.calls) >= 2:
            break
    # the last window's verdict is still pending, and the final check was asked already
    assert len(judge.calls) == 2 and not task.done()
    judge.gate.set()
    result = await task
    assert result.text == "hello there" and len(judge.calls) == 2
