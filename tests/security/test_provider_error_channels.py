"""A provider's own error text stays in the process unless the application opts in.

The text of a provider error can echo the prompt (a card number the user typed), name internal
hosts or carry account details. Every channel it used to leave by is reproduced here: the 502
body of `generate`, the SSE `error` and `tool-error` chunks, tool errors stored in memory and
shown to the model, span statuses, and the WARNING log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry import metrics, trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import NoOpTracerProvider
from tests.server.helpers import sse_events

from sluicegate import Agent, Sluicegate
from sluicegate.errors import APICallError, ConfigurationError, code_of, public_error, safe_code
from sluicegate.memory import Memory
from sluicegate.models._http_errors import stream_error, to_api_call_error
from sluicegate.processors import Processor
from sluicegate.server import ServerSettings, create_app
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import create_tool
from sluicegate.tracing import configure

SECRET = "card 4111 1111 1111 1111 from the prompt; gateway gw-7.internal.corp"
PUBLIC = "provider mock-provider answered 500 (code: server_error)"


def provider_failure() -> APICallError:
    body = {"error": {"message": SECRET, "type": "server_error", "code": None}}
    return APICallError(
        SECRET,
        url="https://gw-7.internal.corp/v1/chat/completions",
        status_code=500,
        response_body=json.dumps(body),
        is_retryable=False,
        data=body,
    )


def failing_agent(**options: Any) -> Agent:
    return Agent(name="failing", model=MockModel([provider_failure()]), **options)


def client_for(agent: Agent) -> TestClient:
    return TestClient(create_app(Sluicegate(agents=[agent]), ServerSettings()))


# ---------------------------------------------------------------- the public face


def test_public_message_names_status_provider_and_code_only() -> None:
    error = provider_failure()
    error.provider = "openai.chat"
    assert error.public_message == "provider openai.chat answered 500 (code: server_error)"
    assert str(error) == SECRET  # in-process code (process_api_error) keeps the text
    public = error.public_json()
    assert public == {
        "message": "provider openai.chat answered 500 (code: server_error)",
        "name": "AI_APICallError",
        "isRetryable": False,
        "provider": "openai.chat",
        "statusCode": 500,
        "code": "server_error",
    }
    detailed = error.public_json(details=True)
    assert detailed["detail"] == SECRET and SECRET in detailed["responseBody"]


def test_public_message_without_status_or_provider() -> None:
    assert APICallError("connection reset").public_message == "the model provider could not be reached"
    event = {"type": "error", "error": {"type": "overloaded_error", "message": SECRET}}
    mid_stream = stream_error(event, url=None)
    assert mid_stream.public_message == ("the model provider reported an error (code: overloaded_error)")
    assert SECRET not in json.dumps(public_error(mid_stream))


def test_a_code_that_is_free_text_is_dropped() -> None:
    body = {"error": {"code": f"bad request: {SECRET}", "type": "invalid_request_error"}}
    assert code_of(body) == "invalid_request_error"
    assert safe_code(SECRET) is None and safe_code(404) == "404" and safe_code(True) is None
    error = APICallError(SECRET, status_code=400, data={"error": {"code": SECRET}})
    assert error.code is None
    assert error.public_message == "the model provider answered 400"


def test_sdk_errors_carry_their_code() -> None:
    class FakeStatusError(Exception):
        status_code = 429
        response = None

        def __init__(self, message: str) -> None:
            super().__init__(message)
            self.body = {"error": {"message": SECRET, "type": "requests", "code": "rate_limit_exceeded"}}

    error = to_api_call_error(FakeStatusError(SECRET))
    assert error.code == "rate_limit_exceeded" and error.is_retryable
    assert error.public_message == "the model provider answered 429 (code: rate_limit_exceeded)"


def test_the_option_must_be_a_bool() -> None:
    with pytest.raises(ConfigurationError, match="provider_error_details"):
        Agent(name="a", model=MockModel([]), provider_error_details="yes")  # type: ignore[arg-type]


# ---------------------------------------------------------------- in process


async def test_in_process_the_error_chunk_and_error_processors_keep_the_error() -> None:
    seen: list[BaseException] = []

    class Watcher(Processor):
        id = "watcher"

        def process_api_error(self, args: Any) -> None:
            seen.append(args.error)

    agent = failing_agent(error_processors=[Watcher()])
    output = await agent.stream("hi")
    chunks = [chunk async for chunk in output.full_stream]
    error = next(c for c in chunks if c.type == "error").payload.error
    assert isinstance(error, APICallError) and str(error) == SECRET
    assert error.provider == "mock-provider"  # filled in by the loop
    assert seen == [error]


# ---------------------------------------------------------------- the server


def test_generate_502_body_is_the_public_summary() -> None:
    response = client_for(failing_agent()).post("/api/agents/failing/generate", json={"messages": "hi"})
    assert response.status_code == 502
    assert response.json() == {
        "error": f"model provider error: {PUBLIC}",
        "name": "AI_APICallError",
        "isRetryable": False,
        "provider": "mock-provider",
        "statusCode": 500,
        "code": "server_error",
    }
    assert "4111" not in response.text and "internal.corp" not in response.text


def test_generate_502_body_carries_the_detail_when_the_agent_opts_in() -> None:
    agent = failing_agent(provider_error_details=True)
    response = client_for(agent).post("/api/agents/failing/generate", json={"messages": "hi"})
    assert response.status_code == 502
    assert response.json()["detail"] == SECRET
    assert response.json()["error"] == f"model provider error: {PUBLIC}"


def test_stream_error_chunk_is_the_public_summary() -> None:
    response = client_for(failing_agent()).post("/api/agents/failing/stream", json={"messages": "hi"})
    events, done = sse_events(response.text)
    assert done
    error = next(e for e in events if e["type"] == "error")["payload"]["error"]
    assert error["message"] == PUBLIC and error["code"] == "server_error" and error["statusCode"] == 500
    assert "4111" not in response.text and "internal.corp" not in response.text


def test_stream_error_chunk_carries_the_detail_when_the_agent_opts_in() -> None:
    agent = failing_agent(provider_error_details=True)
    response = client_for(agent).post("/api/agents/failing/stream", json={"messages": "hi"})
    events, _ = sse_events(response.text)
    error = next(e for e in events if e["type"] == "error")["payload"]["error"]
    assert error["message"] == PUBLIC and error["detail"] == SECRET


def _tool_agent(store: SQLiteStore | None = None, **options: Any) -> tuple[Agent, MockModel]:
    async def lookup(_: Any, __: Any) -> Any:
        raise provider_failure()  # a tool that calls a model itself

    tool = create_tool(id="lookup", description="looks up", execute=lookup)
    model = MockModel([tool_call_step(("c1", "lookup", {})), text_step("done")])
    memory = Memory(storage=store) if store is not None else None
    return Agent(name="tooly", model=model, tools=[tool], memory=memory, **options), model


def test_stream_tool_error_chunk_is_the_public_summary() -> None:
    agent, _ = _tool_agent()
    response = client_for(agent).post("/api/agents/tooly/stream", json={"messages": "hi"})
    events, done = sse_events(response.text)
    assert done
    error = next(e for e in events if e["type"] == "tool-error")["payload"]["error"]
    assert error["message"] == "the model provider answered 500 (code: server_error)"
    assert "4111" not in response.text and "internal.corp" not in response.text


# ---------------------------------------------------------------- memory and the model


@pytest.mark.parametrize("details", [False, True])
async def test_tool_errors_stored_and_shown_to_the_model(tmp_path: Path, details: bool) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    agent, model = _tool_agent(store, provider_error_details=details)
    await agent.generate("hi", memory={"thread": "t1", "resource": "u1"})
    stored = json.dumps([m.to_dict() for m in await store.list_messages("t1")])
    second_prompt = json.dumps(model.calls[1].prompt)
    assert ("answered 500 (code: server_error)" in stored) is not details
    assert ("4111" in stored) is details
    assert ("4111" in second_prompt) is details


# ---------------------------------------------------------------- spans


@pytest.fixture
def no_global_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: NoOpTracerProvider())
    monkeypatch.setattr(metrics, "get_meter_provider", lambda: NoOpMeterProvider())


@pytest.fixture(params=[False, True], ids=["no-content", "capture-content"])
def telemetry(request: pytest.FixtureRequest, no_global_providers: None) -> Iterator[tuple[Any, bool]]:
    setup = configure(in_memory=True, capture_content=request.param, set_global=False)
    yield setup, request.param
    setup.shutdown()


async def test_span_statuses_hold_the_summary_unless_content_is_captured(telemetry: tuple[Any, bool]) -> None:
    setup, content = telemetry
    with pytest.raises(APICallError):
        await failing_agent().generate("hi")
    descriptions = [span.status.description or "" for span in setup.spans()]
    failed = [d for d in descriptions if "APICallError" in d]
    assert len(failed) >= 2  # the chat span and the run span
    assert all(PUBLIC in d for d in failed)
    assert all(("4111" in d) is content for d in failed)
    recorded = json.dumps([dict(span.attributes or {}) for span in setup.spans()])
    assert "4111" not in recorded


# ---------------------------------------------------------------- logs


@pytest.mark.parametrize("details", [False, True])
async def test_the_warning_log_has_the_detail_only_when_enabled(
    caplog: pytest.LogCaptureFixture, details: bool
) -> None:
    caplog.set_level(logging.WARNING, logger="sluicegate")
    output = await failing_agent(provider_error_details=details).stream("hi")
    assert [c async for c in output.full_stream][-1].type == "finish"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(PUBLIC in message for message in warnings)
    assert any("4111" in message for message in warnings) is details


# ---------------------------------------------------------------- wrapped provider errors


def test_a_processor_error_wrapping_a_provider_error_shows_the_summary() -> None:
    class Enricher(Processor):
        id = "enricher"

        def process_input(self, args: Any) -> None:
            raise provider_failure()  # a processor that called a model itself

    agent = Agent(name="wrapped", model=MockModel([text_step("x")]), input_processors=[Enricher()])
    client = client_for(agent)
    response = client.post("/api/agents/wrapped/generate", json={"messages": "hi"})
    assert response.status_code == 500
    assert "enricher" in response.json()["error"] and "answered 500" in response.json()["error"]
    assert "4111" not in response.text
    streamed = client.post("/api/agents/wrapped/stream", json={"messages": "hi"}).text
    events, _ = sse_events(streamed)
    assert events[-1]["type"] == "error" and "answered 500" in events[-1]["payload"]["error"]["message"]
    assert "4111" not in streamed


async def test_a_failing_judge_model_does_not_put_the_provider_text_in_the_tripwire() -> None:
    from sluicegate.processors import ModerationProcessor

    judge = MockModel([provider_failure()], provider="judge-provider")
    guard = ModerationProcessor(model=judge, strategy="block")
    agent = Agent(name="judged", model=MockModel([text_step("hello")]), input_processors=[guard])
    output = await agent.stream("hi")
    chunks = [chunk async for chunk in output.full_stream]
    tripwire = chunks[-1]
    assert tripwire.type == "tripwire"
    dumped = json.dumps(tripwire.to_dict())
    assert "provider judge-provider answered 500 (code: server_error)" in dumped
    assert "4111" not in dumped and "internal.corp" not in dumped


async def test_retry_and_tool_failure_logs_hold_the_summary(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sluicegate")
    retryable = provider_failure()
    retryable.is_retryable = True
    retryable.response_headers = {"retry-after-ms": "1"}
    agent = Agent(name="retrying", model=MockModel([retryable, text_step("ok")]), max_retries=1)
    assert (await agent.generate("hi")).text == "ok"
    tool_agent, _ = _tool_agent()
    await tool_agent.generate("hi")
    logged = [r.getMessage() for r in caplog.records]
    assert any("retry 1 of 1" in m and "answered 500 (code: server_error)" in m for m in logged)
    assert any("tool 'lookup' failed: the model provider answered 500" in m for m in logged)
    assert not any("4111" in m for m in logged)


def test_gemini_status_names_are_preferred_to_numbers() -> None:
    body = {"error": {"code": 429, "message": SECRET, "status": "RESOURCE_EXHAUSTED"}}
    assert code_of(body) == "RESOURCE_EXHAUSTED"
    assert code_of({"error": {"code": 500, "message": SECRET}}) == "500"
