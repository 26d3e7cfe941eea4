"""`output_stream` spans: one per processor per step, with counters that match what each
processor really saw, dropped and changed (checked against the processors' own counts)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.tracing.helpers import by_name

from sluicegate import Agent
from sluicegate.processors import Processor
from sluicegate.processors.stream_counts import EXACT_CHUNKS, SAMPLE_MASK
from sluicegate.stream import Chunk
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step
from sluicegate.tracing import Telemetry, configure

ACTIONS = ("pass", "modify", "drop", "fan", "fan-data")


class Scripted(Processor):
    """Acts by a script (cycled over the calls) and counts what it really did."""

    def __init__(self, index: int, script: list[str], data_parts: bool) -> None:
        super().__init__()
        self.id = f"p{index}"
        self.script = script
        self.process_data_parts = data_parts
        self.seen = self.dropped = self.modified = 0
        self.text_in = self.text_out = ""
        self.added_data = False
        self.held = 0  # the most text it had taken in but not yet passed on

    def process_output_stream(self, args: Any) -> Any:
        out = self._act(args)
        self.held = max(self.held, len(self.text_in) - len(self.text_out))
        return out

    def _act(self, args: Any) -> Any:
        action = self.script[self.seen % len(self.script)]
        self.seen += 1
        part: Chunk = args.part
        if part.type == "text-delta":
            self.text_in += part.payload.text
        if action == "pass" or part.type != "text-delta":
            if part.type == "text-delta":
                self.text_out += part.payload.text
            return part
        if action == "drop":
            self.dropped += 1
            return None
        self.modified += 1
        if action == "modify":
            changed = part.copy()
            changed.payload.text = part.payload.text.upper()
            self.text_out += changed.payload.text
            return changed
        self.text_out += part.payload.text
        if action == "fan":
            self.text_out += part.payload.text
            return [part, part.copy()]
        self.added_data = True
        return [part, {"type": "data-note", "data": {"from": self.id}}]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    scripts=st.lists(
        st.tuples(st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=5), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    deltas=st.integers(min_value=0, max_value=12),
)
async def test_stream_counters_match_what_each_processor_did(
    scripts: list[tuple[list[str], bool]], deltas: int
) -> None:
    telemetry = configure(in_memory=True, set_global=False)
    try:
        processors = [Scripted(i, script, data) for i, (script, data) in enumerate(scripts)]
        text = "abcdefghijklmnopqrstuvwxyz"[:deltas]
        agent = Agent(
            "s", model=MockModel([text_step(text, pieces=max(1, deltas))]), output_processors=processors
        )
        await agent.generate("go")
        spans = telemetry.spans()
        for processor in processors:
            (span,) = by_name(spans, f"processor {processor.id} output_stream")
            attributes = span.attributes
            assert attributes["sluicegate.stream.chunks_seen"] == processor.seen
            assert attributes["sluicegate.stream.chunks_dropped"] == processor.dropped
            assert attributes["sluicegate.stream.chunks_modified"] == processor.modified
            # "modified" only when what it passed on differs from what it was given; "held" when
            # it was the same but for a while it had passed on less than it was given
            changed = processor.text_in != processor.text_out or processor.added_data
            expected = "modified" if changed else "held" if processor.held else "pass"
            assert attributes.get("sluicegate.stream.held_chars", 0) == processor.held
            assert attributes["sluicegate.processor.outcome"] == expected
    finally:
        telemetry.shutdown()


class Counter(Processor):
    def __init__(self, pid: str) -> None:
        super().__init__()
        self.id = pid

    async def process_output_stream(self, args: Any) -> Any:
        return args.part


async def test_one_span_per_processor_per_step_and_sampled_timing(telemetry: Telemetry) -> None:
    deltas = 300
    model = MockModel([text_step("x" * deltas, pieces=deltas), text_step("done", pieces=2)])
    agent = Agent(
        "long", model=model, output_processors=[Counter("a"), Counter("b")], max_processor_retries=1
    )

    class RetryFirst(Processor):
        id = "retry-first"

        def process_output_step(self, args: Any) -> None:
            if args.step_number == 0:
                args.abort("again", retry=True)

    agent.output_processors.append(RetryFirst())
    await agent.generate("go")
    spans = telemetry.spans()
    for pid in ("a", "b"):
        first, second = by_name(spans, f"processor {pid} output_stream")
        assert first.attributes["sluicegate.step_number"] == 0
        assert second.attributes["sluicegate.step_number"] == 1
        # step-start, text-start, 300 deltas, text-end, step-finish
        seen = deltas + 4
        assert first.attributes["sluicegate.stream.chunks_seen"] == seen
        timed = EXACT_CHUNKS + sum(1 for call in range(EXACT_CHUNKS + 1, seen + 1) if call & SAMPLE_MASK == 0)
        assert first.attributes["sluicegate.stream.chunks_timed"] == timed
        assert first.attributes["sluicegate.hook.duration_ms"] > 0
        # the second step counts afresh: step-start, text-start, 2 deltas, text-end, step-finish, finish
        assert second.attributes["sluicegate.stream.chunks_seen"] == 7
        assert second.attributes["sluicegate.stream.chunks_timed"] == 7
        assert first.end_time <= second.start_time


async def test_a_stream_abort_and_a_stream_failure_are_outcomes(telemetry: Telemetry) -> None:
    class Stopper(Processor):
        id = "stopper"

        def process_output_stream(self, args: Any) -> Any:
            if args.part.type == "text-delta" and "top" in args.part.payload.text:
                args.abort("saw stop")
            return args.part

    class Broken(Processor):
        id = "broken"

        def process_output_stream(self, args: Any) -> Any:
            if args.part.type == "text-delta":
                raise RuntimeError("boom")
            return args.part

    after = Counter("after")
    agent = Agent(
        "a", model=MockModel([text_step("go stop now", pieces=3)]), output_processors=[Stopper(), after]
    )
    result = await agent.generate("x")
    assert result.tripwire is not None
    spans = telemetry.spans()
    (stopper,) = by_name(spans, "processor stopper output_stream")
    assert stopper.attributes["sluicegate.processor.outcome"] == "abort"
    assert stopper.attributes["sluicegate.tripwire.reason"] == "saw stop"
    assert stopper.attributes["sluicegate.tripwire.retry"] is False
    # step-start, text-start, "go s", "top " (aborted)
    assert stopper.attributes["sluicegate.stream.chunks_seen"] == 4
    (downstream,) = by_name(spans, "processor after output_stream")
    assert downstream.attributes["sluicegate.stream.chunks_seen"] == 3

    telemetry.clear()
    agent = Agent("b", model=MockModel([text_step("hello")]), output_processors=[Broken()])
    output = await agent.stream("x")
    await output.consume()
    (broken,) = by_name(telemetry.spans(), "processor broken output_stream")
    assert broken.attributes["sluicegate.processor.outcome"] == "error"
    assert broken.attributes["error.type"] == "RuntimeError"
    assert "sluicegate.tripwire.reason" not in broken.attributes
