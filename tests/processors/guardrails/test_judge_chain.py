"""LLM guardrails kept apart by a deterministic processor (`RegexFilter`) judge the stream at
once: the later judge judges the filter's output ahead of time, and its verdicts count only for
text it then receives exactly as judged. Outcomes stay those of judging one after another."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from sluicegate import Agent, create_tool
from sluicegate.guardrails.judge_panels import link_judge_panels
from sluicegate.guardrails.speculative import SpeculativeStream
from sluicegate.guardrails.windows import WindowedStream
from sluicegate.models.base import CallOptions, GenerateResult, StreamResult
from sluicegate.processors import (
    ModerationProcessor,
    PIIDetector,
    Processor,
    RegexFilter,
    SystemPromptScrubber,
)
from sluicegate.processors.args import ProcessOutputStreamArgs
from sluicegate.processors.base import make_abort
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk
from sluicegate.testing import MockModel, tool_call_step

from .conftest import CLEAN, deltas_step, detector_prompt, stream_text

EMAIL = "ada.lovelace@example.org"
HATE = {"category_scores": [{"category": "hate", "score": 0.9}], "reason": "hateful"}
WORDS = ["The report shows steady growth ", "across regions, and more. "] * 4


class Flight:
    """Judge calls in flight at once, over several judges."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0


class Judge(MockModel):
    """A detector answering `route(prompt)` after `latency` seconds, once `gate` opens."""

    def __init__(
        self,
        route: Callable[[str], dict[str, Any]] = lambda _: CLEAN,
        *,
        latency: float = 0.0,
        flight: Flight | None = None,
    ) -> None:
        super().__init__()
        self.route = route
        self.latency = latency
        self.flight = flight or Flight()
        self.gate = asyncio.Event()
        self.gate.set()

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        self.calls.append(options)
        flight = self.flight
        flight.now += 1
        flight.most = max(flight.most, flight.now)
        try:
            await self.gate.wait()
            if self.latency:
                await asyncio.sleep(self.latency)
        finally:
            flight.now -= 1
        answer = json.dumps(self.route(detector_prompt(options)))
        return GenerateResult(content=[{"type": "text", "text": answer}], finish_reason="stop", usage={})

    def prompts(self) -> list[str]:
        return [detector_prompt(call) for call in self.calls]


def regex(**options: Any) -> RegexFilter:
    return RegexFilter(presets=["pii"], strategy=options.pop("strategy", "redact"), phase="output", **options)


def email_route(prompt: str) -> dict[str, Any]:
    if EMAIL not in prompt:
        return CLEAN
    return {"detections": [{"type": "email", "value": EMAIL, "confidence": 0.99}]}


async def until(check: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


def collect(output: Any) -> tuple[asyncio.Task[None], list[Chunk]]:
    seen: list[Chunk] = []

    async def run() -> None:
        async for chunk in output.full_stream:
            seen.append(chunk)

    return asyncio.create_task(run()), seen


def released(chunks: list[Chunk]) -> str:
    return "".join(c.payload.text for c in chunks if c.type == "text-delta")


async def test_judges_kept_apart_by_a_regex_filter_judge_the_first_window_at_once() -> None:
    flight = Flight()
    first, second = Judge(flight=flight), Judge(flight=flight)
    first.gate.clear()
    second.gate.clear()
    guards = [
        ModerationProcessor(model=first, window_chars=40, overlap_chars=8),
        regex(),
        PIIDetector(model=second, window_chars=40, overlap_chars=8),
    ]
    pieces = [f"Write to {EMAIL} please. ", *WORDS]
    agent = Agent(name="c", model=MockModel([deltas_step(*pieces)]), output_processors=guards)
    task, seen = collect(await agent.stream("hi"))
    await until(lambda: bool(first.calls and second.calls))
    # both judges were asked before either answered, and nothing was released yet
    assert flight.most >= 2
    assert not any(c.type == "text-delta" for c in seen)
    # the second judge judged the filter's output, not the model's text
    assert "Write to [EMAIL] please." in second.prompts()[0]
    assert EMAIL in first.prompts()[0] and all(EMAIL not in p for p in second.prompts())
    first.gate.set()
    second.gate.set()
    await task
    assert released(seen) == "".join(pieces).replace(EMAIL, "[EMAIL]")


async def test_a_judge_regex_judge_chain_costs_about_one_judge_latency() -> None:
    latency = 0.5  # sequential judging takes two (1 s), judging at once one (0.5 s)
    flight = Flight()
    guards = [
        ModerationProcessor(model=Judge(latency=latency, flight=flight)),
        regex(),
        PIIDetector(model=Judge(latency=latency, flight=flight)),
    ]
    agent = Agent(name="c", model=MockModel([deltas_step(*WORDS)]), output_processors=guards)
    start = time.perf_counter()
    text, _ = await stream_text(await agent.stream("hi"))
    elapsed = time.perf_counter() - start
    assert text == "".join(WORDS)
    # the last windows and the whole-response checks of both judges were all in flight at once
    assert flight.most >= 4
    assert elapsed < 1.6 * latency


async def test_the_second_judge_trips_on_what_the_filter_redacted(violations: Any) -> None:
    # the second judge blocks on the filter's replacement: it must see the filtered text
    second = ModerationProcessor(model=Judge(lambda p: HATE if "[EMAIL]" in p else CLEAN))
    first = ModerationProcessor(model=Judge())
    first.id = "moderation-first"
    seen = violations(second)
    agent = Agent(
        name="c",
        model=MockModel([deltas_step("fine words, ", f"mail {EMAIL} ", "now")]),
        output_processors=[first, regex(), second],
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    assert EMAIL not in text and "[EMAIL]" not in text
    assert chunks[-1].type == "tripwire" and chunks[-1].payload.processor_id == "moderation"
    assert seen


async def test_the_second_judge_never_trips_on_what_the_filter_removed() -> None:
    second = ModerationProcessor(model=Judge(lambda p: HATE if EMAIL in p else CLEAN))
    first = ModerationProcessor(model=Judge())
    first.id = "moderation-first"
    agent = Agent(
        name="c",
        model=MockModel([deltas_step("fine words, ", f"mail {EMAIL} ", "now")]),
        output_processors=[first, regex(), second],
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    assert text == "fine words, mail [EMAIL] now"
    assert not any(c.type == "tripwire" for c in chunks)


async def test_a_verdict_on_text_the_first_judge_then_redacted_is_not_used() -> None:
    # The first judge redacts the email; the second judge blocks on the raw email, which it
    # sees ahead of time, but one after another it would never have received it: no tripwire,
    # and the text it received is judged again.
    first = PIIDetector(model=Judge(email_route), redaction_method="placeholder")
    second_judge = Judge(lambda p: HATE if EMAIL in p else CLEAN)
    second = ModerationProcessor(model=second_judge)
    rule = {"name": "secret", "pattern": r"\bhunter2\b", "replacement": "[SECRET]"}
    agent = Agent(
        name="c",
        model=MockModel([deltas_step("fine words, ", f"mail {EMAIL} ", "or hunter2 now")]),
        output_processors=[first, RegexFilter(rules=[rule], strategy="redact", phase="output"), second],
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    assert text == "fine words, mail [EMAIL] or [SECRET] now"
    assert not any(c.type == "tripwire" for c in chunks)
    prompts = second_judge.prompts()
    assert any(EMAIL in p for p in prompts)  # judged ahead of time...
    assert any("[EMAIL]" in p and "[SECRET]" in p for p in prompts)  # ...and again as received


async def test_nothing_is_released_before_every_judge_passed_it() -> None:
    for closed in (0, 1):
        judges = [Judge(), Judge()]
        judges[closed].gate.clear()
        guards = [ModerationProcessor(model=judges[0]), regex(), PIIDetector(model=judges[1])]
        agent = Agent(name="c", model=MockModel([deltas_step(*WORDS)]), output_processors=guards)
        task, seen = collect(await agent.stream("hi"))
        await until(lambda closed_judge=judges[closed]: bool(closed_judge.calls))  # type: ignore[misc]
        await asyncio.sleep(0.1)  # the open judge's verdicts are in
        assert released(seen) == "", f"released with judge {closed} still judging"
        judges[closed].gate.set()
        await task
        assert released(seen) == "".join(WORDS)


async def test_a_failing_judge_after_the_filter_fails_closed() -> None:
    class Broken(SystemPromptScrubber):
        async def judge_window(self, text: str, args: Any) -> Any:
            raise RuntimeError("judge crashed")

    agent = Agent(
        name="c",
        model=MockModel([deltas_step("hello ", "world")]),
        output_processors=[ModerationProcessor(model=Judge()), regex(), Broken(model=Judge())],
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    errors = [c for c in chunks if c.type == "error"]
    assert text == "" and errors and "system-prompt-scrubber" in str(errors[0].payload.error)


async def test_a_blocking_filter_between_judges_still_blocks() -> None:
    agent = Agent(
        name="c",
        model=MockModel([deltas_step("fine words, ", f"mail {EMAIL} ", "now")]),
        output_processors=[
            ModerationProcessor(model=Judge()),
            regex(strategy="block"),
            PIIDetector(model=Judge()),
        ],
    )
    text, chunks = await stream_text(await agent.stream("hi"))
    assert EMAIL not in text
    assert chunks[-1].type == "tripwire" and chunks[-1].payload.processor_id == "regex-filter"


async def test_the_filter_reports_each_redaction_once(violations: Any) -> None:
    filter_ = regex()
    seen = violations(filter_)
    agent = Agent(
        name="c",
        model=MockModel([deltas_step("fine words, ", f"mail {EMAIL} ", "now")]),
        output_processors=[ModerationProcessor(model=Judge()), filter_, PIIDetector(model=Judge())],
    )
    text, _ = await stream_text(await agent.stream("hi"))
    assert text == "fine words, mail [EMAIL] now"
    stream_reports = [v for v in seen if v.detail.get("phase") == "process_output_stream"]
    assert len(stream_reports) == 1


class Relay(Processor):
    """A stream processor that is not a deterministic text rewrite."""

    id = "relay"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        return args.part


async def test_another_processor_still_keeps_judges_apart() -> None:
    first, second = Judge(), Judge()
    first.gate.clear()
    guards = [ModerationProcessor(model=first), regex(), Relay(), PIIDetector(model=second)]
    agent = Agent(name="c", model=MockModel([deltas_step("hello ", "world")]), output_processors=guards)
    task, _ = collect(await agent.stream("hi"))
    await until(lambda: bool(first.calls))
    await asyncio.sleep(0.05)
    assert not second.calls
    first.gate.set()
    await task
    assert second.calls


async def test_a_chain_judges_each_step_of_a_run_with_tools() -> None:
    async def lookup() -> str:
        return f"the owner is {EMAIL}"

    tool = create_tool(id="lookup", description="looks up", execute=lookup)
    second = Judge(lambda p: HATE if EMAIL in p else CLEAN)
    model = MockModel(
        [
            tool_call_step(("c1", "lookup", {}), text="Let me look. "),
            deltas_step("It belongs to ", f"{EMAIL}, ", "as far as I can tell."),
        ]
    )
    agent = Agent(
        name="c",
        model=model,
        tools=[tool],
        output_processors=[ModerationProcessor(model=Judge()), regex(), ModerationProcessor(model=second)],
    )
    # the second moderation has the default id too: give the first its own state
    agent.output_processors[0].id = "moderation-first"  # type: ignore[index]
    text, chunks = await stream_text(await agent.stream("hi"))
    assert text == "Let me look. It belongs to [EMAIL], as far as I can tell."
    assert not any(c.type in ("tripwire", "error") for c in chunks)
    assert all(EMAIL not in p for p in second.prompts())


async def test_a_window_the_first_judge_withholds_is_judged_again_downstream() -> None:
    pieces = ["Some BAD words here. ", *WORDS]

    async def run(*, apart: bool) -> tuple[str, Judge]:
        first = ModerationProcessor(
            model=Judge(lambda p: HATE if "BAD" in p else CLEAN),
            strategy="filter",
            window_chars=40,
            overlap_chars=8,
        )
        first.id = "moderation-first"
        judge = Judge()
        second = PIIDetector(model=judge, window_chars=40, overlap_chars=8)
        chain = [first, regex(), *([Relay()] if apart else []), second]
        agent = Agent(name="c", model=MockModel([deltas_step(*pieces)]), output_processors=chain)
        text, chunks = await stream_text(await agent.stream("hi"))
        assert not any(c.type in ("tripwire", "error") for c in chunks)
        return text, judge

    text, judge = await run(apart=False)
    one_after_another, _ = await run(apart=True)
    assert "BAD" not in text and text == one_after_another
    # judged ahead of time with the window the first judge then withheld, and again without it
    prompts = judge.prompts()
    assert any("BAD" in p for p in prompts) and any("BAD" not in p for p in prompts)


async def test_an_optimistic_judge_after_the_filter_retracts_what_it_flags() -> None:
    second = ModerationProcessor(model=Judge(lambda p: HATE if "BAD" in p else CLEAN), release="optimistic")
    first = PIIDetector(model=Judge(email_route), redaction_method="placeholder")
    agent = Agent(
        name="c",
        model=MockModel([deltas_step("fine ", "BAD ", "words")]),
        output_processors=[first, regex(), second],
    )
    _, chunks = await stream_text(await agent.stream("hi"))
    types = [c.type for c in chunks]
    assert "data-guardrail-retraction" in types and types[-1] == "tripwire"
    assert chunks[-1].payload.processor_id == "moderation"


def test_the_runner_links_judges_across_filters_only() -> None:
    def link(*processors: Any) -> list[Any]:
        states: dict[str, dict[str, Any]] = {}
        chain = []
        for processor in processors:
            state = states.setdefault(processor.id, {})
            args = ProcessOutputStreamArgs(
                abort=make_abort(processor.id), request_context=RequestContext(), state=state
            )
            chain.append((processor, args))
        link_judge_panels(chain)
        return [args.state.get("windowed_stream") for _, args in chain]

    first, second = ModerationProcessor(model=Judge()), PIIDetector(model=Judge())
    streams = link(regex(), first, regex(), second, regex())
    head, follower = streams[1], streams[3]
    assert type(head) is WindowedStream and isinstance(follower, SpeculativeStream)
    assert head.shadow is not None and [len(stages) for stages, _ in head.shadow.legs] == [1]
    # a filter before the first judge or after the last one is not run ahead of time
    assert head.shadow.legs[0][1] is follower
    # another processor ends the chain; a judge placed twice judges on its own
    assert link(first, regex(), Relay(), second) == [None, None, None, None]
    assert link(first, regex(), first) == [None, None, None]


class Paced(MockModel):
    """A main model streaming `deltas` `pause` seconds apart; `done` is when it finished."""

    def __init__(self, deltas: list[str], pause: float) -> None:
        super().__init__()
        self.deltas = deltas
        self.pause = pause
        self.done = 0.0

    async def do_stream(self, options: CallOptions) -> StreamResult:
        async def parts() -> AsyncIterator[dict[str, Any]]:
            yield {"type": "stream-start", "warnings": []}
            yield {"type": "text-start", "id": "t1"}
            for delta in self.deltas:
                await asyncio.sleep(self.pause)
                yield {"type": "text-delta", "id": "t1", "delta": delta}
            yield {"type": "text-end", "id": "t1"}
            yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}}
            self.done = time.perf_counter()

        return StreamResult(stream=parts())


async def test_after_an_early_redaction_the_rest_is_judged_ahead_of_time_again() -> None:
    # one after another, the last text comes two latencies after the model's end; the model
    # streams for longer than a latency, so there is text left to judge ahead of time
    latency = 0.3

    def name_route(prompt: str) -> dict[str, Any]:
        if "Ada Lovelace" not in prompt:
            return CLEAN
        return {"detections": [{"type": "name", "value": "Ada Lovelace", "confidence": 0.99}]}

    first = PIIDetector(
        model=Judge(name_route, latency=latency),
        redaction_method="placeholder",
        window_chars=80,
        overlap_chars=20,
    )
    second_judge = Judge(latency=latency)
    second = ModerationProcessor(model=second_judge, window_chars=80, overlap_chars=20)
    words = ["Ask ", "Ada ", "Lovelace ", *(word + " " for word in " ".join(WORDS).split() * 4)]
    model = Paced(words, 0.007)
    agent = Agent(name="c", model=model, output_processors=[first, regex(), second])
    output = await agent.stream("hi")
    text, last = "", 0.0
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            text, last = text + chunk.payload.text, time.perf_counter()
    assert text == "".join(words).replace("Ada Lovelace", "[NAME]")
    # the second judge saw the name ahead of time, then judged again what it received...
    prompts = second_judge.prompts()
    assert any("Ada Lovelace" in p for p in prompts) and any("[NAME]" in p for p in prompts)
    # ...and judged the rest ahead of time again: its last verdict came with the first's
    assert last - model.done < 1.6 * latency
