"""A real OpenAI-compatible server: `llama_cpp.server` serving the embedded GGUF, driven through
`OpenAICompatible` by an agent with output processors (integration)."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

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


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        missing_service("llama-cpp-python[server] is not installed")
    from sluicegate.models.local import smollm2_path

    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    log = log_path.open("wb")  # a file, not a pipe: llama.cpp logs enough to fill a pipe and block
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(smollm2_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--model_alias",
            "smollm2",
            # tools need a function-calling chat format (SmolLM2 speaks ChatML)
            "--chat_format",
            "chatml-function-calling",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
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
                pytest.fail(f"llama_cpp.server did not start: {log_path.read_text(errors='replace')[-2000:]}")
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
    # llama_cpp.server ignores stream_options.include_usage, so a streamed call reports no usage;
    # the non-streaming call below checks the usage mapping against it.
    assert [c.type for c in chunks][-1] == "finish"
    assert await output.finish_reason in ("stop", "length")


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


async def test_structured_output_falls_back_from_json_schema(llama_server: str) -> None:
    # llama-cpp-python's server accepts only `json_object` (with the schema as a grammar): the
    # rejected `json_schema` request is retried in that mode, which the model then keeps.
    model = OpenAICompatible("smollm2", base_url=llama_server, name="llamacpp")
    agent = Agent(name="facts", instructions="Answer with facts.", model=model)
    result = await agent.generate(
        "Tell me about Paris.",
        structured_output=City,
        model_settings={"temperature": 0, "max_output_tokens": 80},
    )
    assert isinstance(result.object, City) and result.object.city
    assert model.structured_outputs == "json_object"
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

    agent = Agent(
        name="weather",
        instructions="Report the weather.",
        model=OpenAICompatible("smollm2", base_url=llama_server, name="llamacpp"),
        tools=[get_weather],
    )
    # A named tool streams (llama-cpp-python cannot stream a tool choice the model makes itself);
    # step 2 sends the assistant tool call (content "") and the tool result back to the server.
    result = await agent.generate(
        "What is the weather in Oslo?",
        tool_choice={"type": "tool", "tool_name": "get_weather"},
        max_steps=2,
        model_settings={"temperature": 0, "max_output_tokens": 40},
    )
    assert len(seen) == 2 and all(seen)
    assert [step.finish_reason for step in result.steps] == ["tool-calls", "tool-calls"]
    assert result.steps[1].tool_results
