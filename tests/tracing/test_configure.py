"""`configure()` options, the span tree text, and chunk metadata on the wire."""

from __future__ import annotations

import copy
import pickle

import pytest
from tests.tracing.scenario import PROMPT, build_agent

from sluicegate.errors import ConfigurationError
from sluicegate.stream import Chunk
from sluicegate.stream.chunk import TaggedRunId, tag_run_id, text_delta
from sluicegate.tracing import Telemetry, configure, state


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"otlp_endpoint": "127.0.0.1:4318"}, "otlp_endpoint"),
        ({"otlp_endpoint": "ftp://127.0.0.1"}, "otlp_endpoint"),
        ({"otlp_endpoint": 4318}, "otlp_endpoint"),
        ({"console": "yes"}, "console"),
        ({"capture_content": 1}, "capture_content"),
        ({"in_memory": None}, "in_memory"),
        ({"service_name": ""}, "service_name"),
    ],
)
def test_bad_options_are_rejected_by_name(options: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        configure(set_global=False, **options)  # type: ignore[arg-type]
    assert state.STATE.tracer_provider is None


def test_unknown_options_are_a_type_error() -> None:
    with pytest.raises(TypeError):
        configure(exporter="otlp")  # type: ignore[call-arg]


def test_spans_and_metrics_need_in_memory() -> None:
    telemetry = configure(set_global=False)
    try:
        with pytest.raises(ConfigurationError, match="in_memory"):
            telemetry.spans()
        with pytest.raises(ConfigurationError, match="in_memory"):
            telemetry.metrics()
    finally:
        telemetry.shutdown()
    assert not state.enabled()


async def test_span_tree_text(telemetry: Telemetry) -> None:
    agent, _ = build_agent()
    await agent.generate(PROMPT)
    tree = telemetry.span_tree(["sluicegate.processor.outcome"]).splitlines()
    assert tree[0] == "invoke_agent support"
    assert "  processor retry-429 api_error  [outcome=retry]" in tree
    assert "  execute_tool weather" in tree
    assert "    processor stamp-tool-result tool_result  [outcome=modified]" in tree
    # the output filter's tool_call hook: the tool gets the model's arguments (tool_arguments)
    assert any(line.startswith("  processor pii-output tool_call") for line in tree)
    assert len(tree) == 19  # the run, 4 chat, 1 tool, 13 processor spans


def test_chunk_metadata_rides_on_the_run_id() -> None:
    run_id = tag_run_id("run-1", {"traceId": "ab" * 16})
    assert isinstance(run_id, TaggedRunId) and run_id == "run-1"
    chunk = text_delta(run_id, "t", "hi")
    assert chunk.metadata == {"traceId": "ab" * 16}
    assert chunk.to_dict() == {
        "type": "text-delta",
        "runId": "run-1",
        "from": "AGENT",
        "payload": {"id": "t", "text": "hi"},
        "metadata": {"traceId": "ab" * 16},
    }
    back = Chunk.from_dict(chunk.to_dict())
    assert back.metadata == {"traceId": "ab" * 16} and back == chunk
    assert chunk.copy().metadata == chunk.metadata
    plain = text_delta("run-2", "t", "hi")
    assert plain.metadata is None and "metadata" not in plain.to_dict()
    plain.metadata = {"traceId": "cd" * 16}
    assert plain.to_dict()["metadata"] == {"traceId": "cd" * 16} and plain.run_id == "run-2"
    plain.metadata = None
    assert type(plain.run_id) is str and "metadata" not in plain.to_dict()
    assert tag_run_id("x", {}) == "x" and type(tag_run_id("x", None)) is str


def test_a_tagged_chunk_copies_and_pickles() -> None:
    chunk = text_delta(tag_run_id("run-1", {"traceId": "ab" * 16}), "t", "hi")
    for copied in (copy.deepcopy(chunk), copy.copy(chunk), pickle.loads(pickle.dumps(chunk.run_id))):
        run_id = copied.run_id if isinstance(copied, Chunk) else copied
        assert run_id == "run-1" and run_id.metadata == {"traceId": "ab" * 16}


async def test_console_prints_spans_and_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    telemetry = configure(console=True, set_global=False)
    try:
        agent, _ = build_agent()
        await agent.generate(PROMPT)
    finally:
        telemetry.shutdown()
    printed = capsys.readouterr().out
    assert '"name": "invoke_agent support"' in printed
    assert '"name": "processor no-drafts output_step"' in printed
    assert "sluicegate.processor.tripwires" in printed
