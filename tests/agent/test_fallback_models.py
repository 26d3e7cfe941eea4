"""Fallback models: `model=[{"model": m, "max_retries": n}, ...]` on the agent or the call."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.memory import Memory
from sluicegate.models import retries
from sluicegate.models.registry import register_provider
from sluicegate.processors import ProcessAPIErrorResult, ProcessInputStepResult, Processor
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step, tool_call_step

from .helpers import collect, types, weather_tool


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retries, "INITIAL_DELAY_MS", 1.0)


def server_error() -> APICallError:
    return APICallError("Internal server error", status_code=500, is_retryable=True)


def mid_stream_failure(text: str, error: APICallError) -> list[dict[str, Any]]:
    """A step whose stream starts, shows `text`, then reports `error`."""
    parts: list[dict[str, Any]] = [{"type": "stream-start", "warnings": []}]
    if text:
        parts += [{"type": "text-start", "id": "t1"}, {"type": "text-delta", "id": "t1", "delta": text}]
    return [*parts, {"type": "error", "error": error}]


def model(steps: list[Any], name: str) -> MockModel:
    return MockModel(steps, provider="mock", model_id=name)


# ---------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ([], "model: a fallback list needs at least one model"),
        ([{"model": "a/b", "retries": 1}], "model[0]: unknown key(s) ['retries']"),
        ([{"model": "a/b"}, {"max_retries": 1}], "model[1]: missing key 'model'"),
        ([{"model": "a/b", "max_retries": -1}], "model[0]['max_retries'] must be a non-negative integer"),
        ([{"model": "a/b", "max_retries": True}], "model[0]['max_retries'] must be a non-negative integer"),
        ([{"model": "a/b", "max_retries": "2"}], "model[0]['max_retries'] must be a non-negative integer"),
        (["a/b", 42], "model[1]['model'] must be a 'provider/model' string or a LanguageModel"),
        ([{"model": ["a/b"]}], "model[0]['model'] must be a 'provider/model' string or a LanguageModel"),
    ],
)
def test_bad_fallback_entries_fail_at_construction_naming_entry_and_key(value: Any, named: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Agent("a", model=value)
    assert named in str(caught.value)


async def test_bad_fallback_entries_of_a_call_fail_before_any_model_call() -> None:
    primary = model([text_step("never")], "primary")
    agent = Agent("a", model=primary)
    with pytest.raises(ConfigurationError, match=r"model\[0\]: unknown key\(s\) \['maxRetries'\]"):
        await agent.generate("hi", model=[{"model": primary, "maxRetries": 1}])
    with pytest.raises(ConfigurationError, match=r"model\[1\]\['model'\]: unknown model provider"):
        await agent.generate("hi", model=[primary, "no-such-provider/x"])
    assert primary.calls == []


async def test_strings_model_objects_and_dicts_are_all_entries() -> None:
    by_string = model([text_step("from the string entry")], "by-string")
    register_provider("fallback-test", lambda model_id: by_string)
    failing = model([server_error()], "failing")
    agent = Agent("a", model=[failing, "fallback-test/any", {"model": model([], "unused")}], max_retries=0)
    result = await agent.generate("hi")
    assert result.text == "from the string entry"
    assert result.steps[-1].model == "mock/by-string"


# ---------------------------------------------------------------- falling over


async def test_a_failed_model_hands_the_step_to_the_next_and_the_run_stays_there() -> None:
    primary = model([server_error(), text_step("primary again")], "primary")
    secondary = model([tool_call_step(("c1", "weather", {"city": "Oslo"})), text_step("Sunny")], "secondary")
    agent = Agent(
        "a",
        model=[{"model": primary, "max_retries": 0}, {"model": secondary}],
        tools=[weather_tool()],
    )
    output = await agent.stream("weather?")
    chunks = await collect(output)
    assert types(chunks).count("step-start") == 2  # the failed call shows no step
    assert "error" not in types(chunks)
    assert len(primary.calls) == 1 and len(secondary.calls) == 2
    steps = await output.steps
    assert [s.model for s in steps] == ["mock/secondary", "mock/secondary"]
    finishes = [c for c in chunks if c.type == "step-finish"]
    assert [c.payload.metadata.model for c in finishes] == ["mock/secondary", "mock/secondary"]
    assert await output.text == "Sunny"


async def test_each_model_is_retried_up_to_its_own_max_retries(fast_backoff: None) -> None:
    primary = model([server_error(), server_error(), server_error(), text_step("never")], "primary")
    secondary = model([server_error(), text_step("secondary answers")], "secondary")
    agent = Agent(
        "a",
        model=[{"model": primary, "max_retries": 2}, {"model": secondary, "max_retries": 1}],
        max_retries=0,
    )
    result = await agent.generate("hi")
    assert result.text == "secondary answers"
    assert (len(primary.calls), len(secondary.calls)) == (3, 2)


async def test_an_entry_without_max_retries_takes_the_calls_max_retries(fast_backoff: None) -> None:
    primary = model([server_error(), server_error(), text_step("primary, third try")], "primary")
    agent = Agent("a", model=[{"model": primary}, model([text_step("never")], "secondary")])
    assert (await agent.generate("hi", max_retries=2)).text == "primary, third try"

    primary = model([server_error(), text_step("never")], "primary")
    secondary = model([text_step("secondary")], "secondary")
    agent = Agent("a", model=[primary, secondary])
    assert (await agent.generate("hi", max_retries=0)).text == "secondary"
    assert len(primary.calls) == 1


async def test_a_non_retryable_error_before_the_stream_also_falls_over() -> None:
    primary = model([APICallError("unauthorized", status_code=401)], "primary")
    secondary = model([text_step("secondary")], "secondary")
    result = await Agent("a", model=[primary, secondary]).generate("hi")
    assert result.text == "secondary"


async def test_when_every_model_fails_the_last_error_ends_the_run() -> None:
    last = APICallError("Service unavailable", status_code=503, is_retryable=True)
    agent = Agent("a", model=[model([server_error()], "one"), model([last], "two")], max_retries=0)
    with pytest.raises(APICallError) as caught:
        await agent.generate("hi")
    assert caught.value is last

    agent = Agent(
        "a",
        model=[model([server_error()], "one"), model([APICallError("gone", status_code=503)], "two")],
        max_retries=0,
    )
    output = await agent.stream("hi")
    chunks = await collect(output)
    assert types(chunks) == ["start", "step-start", "error", "step-finish", "finish"]
    assert await output.finish_reason == "error"


async def test_a_call_can_bring_its_own_fallback_list() -> None:
    agent_model = model([text_step("never")], "agent")
    secondary = model([text_step("call's secondary")], "secondary")
    agent = Agent("a", model=agent_model)
    result = await agent.generate(
        "hi", model=[{"model": model([server_error()], "p"), "max_retries": 0}, secondary]
    )
    assert result.text == "call's secondary"
    assert agent_model.calls == []


# ---------------------------------------------------------------- error processors


class RetryOnceThenDecline(Processor):
    id = "retry-once"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def process_api_error(self, args: Any) -> ProcessAPIErrorResult:
        self.seen.append(args.model.model_id)
        return ProcessAPIErrorResult(retry=len(self.seen) == 1)


async def test_error_processors_run_before_a_fallback_and_may_retry_the_same_model() -> None:
    bad_request = APICallError("rejected", status_code=400)
    primary = model([bad_request, bad_request], "primary")
    secondary = model([text_step("secondary")], "secondary")
    processor = RetryOnceThenDecline()
    agent = Agent("a", model=[primary, secondary], error_processors=[processor])
    output = await agent.stream("hi")
    chunks = await collect(output)
    assert processor.seen == ["primary", "primary"]  # asked about each failure, with the failing model
    assert len(primary.calls) == 2 and len(secondary.calls) == 1
    assert [c.payload.step_result.reason for c in chunks if c.type == "step-finish"] == ["retry", "stop"]
    assert await output.text == "secondary"


# ---------------------------------------------------------------- inside a started stream


async def test_a_retryable_error_mid_stream_falls_over_and_drops_the_shown_text() -> None:
    primary = model([mid_stream_failure("The answer is", server_error())], "primary")
    secondary = model([text_step("Secondary's answer")], "secondary")
    memory = Memory(storage=SQLiteStore(":memory:"))
    agent = Agent("a", model=[primary, secondary], memory=memory)
    thread = {"thread": "t1", "resource": "u1"}
    output = await agent.stream("question", memory=thread)
    chunks = await collect(output)
    kinds = types(chunks)
    notice = kinds.index("data-model-fallback")
    deltas = [i for i, c in enumerate(chunks) if c.type == "text-delta"]
    assert deltas[0] < notice < deltas[1]  # after the failed text, before the next model's
    data = chunks[notice].data
    assert data["failedModel"] == "mock/primary" and data["nextModel"] == "mock/secondary"
    assert data["statusCode"] == 500 and data["isRetryable"] is True
    assert chunks[notice].is_transient
    assert kinds.count("step-start") == 1 and "error" not in kinds
    assert await output.text == "Secondary's answer"
    steps = await output.steps
    assert [(s.text, s.model) for s in steps] == [("Secondary's answer", "mock/secondary")]
    stored = await memory.recall("t1", resource_id="u1")
    assert [m.text for m in stored] == ["question", "Secondary's answer"]


async def test_a_mid_stream_switch_before_any_output_is_invisible() -> None:
    primary = model([mid_stream_failure("", server_error())], "primary")
    secondary = model([text_step("fine")], "secondary")
    output = await Agent("a", model=[primary, secondary]).stream("hi")
    chunks = await collect(output)
    assert "data-model-fallback" not in types(chunks)
    assert types(chunks).count("step-start") == 1
    assert await output.text == "fine"


async def test_a_non_retryable_error_mid_stream_does_not_fall_over() -> None:
    filtered = APICallError("content filtered", status_code=400, is_retryable=False)
    primary = model([mid_stream_failure("Some", filtered)], "primary")
    secondary = model([text_step("never")], "secondary")
    output = await Agent("a", model=[primary, secondary]).stream("hi")
    chunks = await collect(output)
    assert "error" in types(chunks) and await output.finish_reason == "error"
    assert secondary.calls == []


# ---------------------------------------------------------------- a processor's own model


async def test_a_model_a_processor_picks_takes_the_configured_models_place_in_the_fallbacks() -> None:
    class Pick(Processor):
        id = "pick"

        def process_input_step(self, args: Any) -> ProcessInputStepResult:
            return ProcessInputStepResult(model=picked)

    picked = model([server_error()], "picked")
    primary = model([], "primary")
    secondary = model([text_step("from the secondary")], "secondary")
    agent = Agent("a", model=[primary, secondary], input_processors=[Pick()], max_retries=0)
    result = await agent.generate("hi")
    assert result.text == "from the secondary"
    assert len(picked.calls) == 1 and primary.calls == [] and len(secondary.calls) == 1


async def test_a_picked_model_without_fallbacks_after_the_configured_one_fails_the_step() -> None:
    class Pick(Processor):
        id = "pick"

        def process_input_step(self, args: Any) -> ProcessInputStepResult:
            return ProcessInputStepResult(model=picked)

    picked = model([server_error()], "picked")
    agent = Agent("a", model=model([], "primary"), input_processors=[Pick()], max_retries=0)
    with pytest.raises(APICallError):
        await agent.generate("hi")
    assert len(picked.calls) == 1


async def test_the_server_lists_an_agent_with_fallback_models_under_its_first_model() -> None:
    from sluicegate.server.serialize import agent_json

    agent = Agent("a", model=[{"model": "openai/gpt-5", "max_retries": 1}, model([], "secondary")])
    listed = await agent_json("a", agent)
    assert (listed["provider"], listed["modelId"]) == ("openai", "gpt-5")


class HoldAll(Processor):
    """Holds every text delta until the step's text is over (a hold-back processor at its most)."""

    id = "hold-all"

    def process_output_stream(self, args: Any) -> Any:
        if args.part.type != "text-delta":
            return args.part
        args.state.setdefault("held", []).append(args.part)
        return None

    def flush_output_stream(self, args: Any) -> list[Any]:
        return args.state.pop("held", [])


async def test_text_a_processor_held_back_from_the_failed_model_stays_with_its_attempt() -> None:
    primary = model([mid_stream_failure("Half of", server_error())], "primary")
    secondary = model([text_step("Whole answer")], "secondary")
    agent = Agent("a", model=[primary, secondary], output_processors=[HoldAll()])
    output = await agent.stream("hi")
    chunks = await collect(output)
    shown = [c.payload.text if c.type == "text-delta" else c.type for c in chunks]
    assert shown.index("Half of") < shown.index("data-model-fallback") < shown.index("Whole answer")
    assert await output.text == "Whole answer"
    assert [s.text for s in await output.steps] == ["Whole answer"]
