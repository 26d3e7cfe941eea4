"""A guardrail or router whose model cannot be used fails when the run starts, before the
main model is called (and paid for), not when the guardrail first runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import ConfigurationError, MissingAPIKeyError, MissingExtraError
from sluicegate.models.registry import _FACTORIES, register_provider
from sluicegate.processors import (
    ClassifierProcessor,
    LanguageDetector,
    ModelRouterProcessor,
    ModerationProcessor,
    PIIDetector,
    PromptInjectionDetector,
    SystemPromptScrubber,
)
from sluicegate.testing import MockModel, text_step
from sluicegate.workflows import create_step, create_workflow

KEYLESS = "openai/gpt-4o-mini"

GUARDS: dict[str, Callable[[], Any]] = {
    "moderation": lambda: ModerationProcessor(model=KEYLESS),
    "pii": lambda: PIIDetector(model=KEYLESS),
    "injection-parallel": lambda: PromptInjectionDetector(
        model=KEYLESS, strategy="warn", run_in_parallel=True
    ),
    "language": lambda: LanguageDetector(model=KEYLESS),
    "scrubber": lambda: SystemPromptScrubber(model=KEYLESS),
    "classifier": lambda: ClassifierProcessor(categories=["billing", "other"], classifier=KEYLESS),
    "router-classifier": lambda: ModelRouterProcessor(routes={"small": MockModel()}, classifier=KEYLESS),
    "router-route": lambda: ModelRouterProcessor(routes={"small": KEYLESS}, rule=lambda text: None),
}


@pytest.fixture(autouse=True)
def _no_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.mark.parametrize("array", ["input_processors", "output_processors"])
@pytest.mark.parametrize("guard", sorted(GUARDS))
async def test_a_keyless_guard_fails_before_the_main_model_is_called(guard: str, array: str) -> None:
    model = MockModel([text_step("the answer")])
    agent = Agent("a", model=model, **{array: [GUARDS[guard]()]})
    with pytest.raises(
        MissingAPIKeyError, match=r"processor '[a-z-]+': its .*cannot be used: .*OPENAI_API_KEY"
    ):
        await agent.generate("hello")
    assert model.calls == []


async def test_a_stream_fails_at_the_call_too() -> None:
    model = MockModel([text_step("the answer")])
    agent = Agent("a", model=model, output_processors=[ModerationProcessor(model=KEYLESS)])
    with pytest.raises(MissingAPIKeyError):
        await agent.stream("hello")
    assert model.calls == []


async def test_per_call_arrays_and_workflows_are_checked() -> None:
    model = MockModel([text_step("the answer")])
    agent = Agent("a", model=model)
    with pytest.raises(MissingAPIKeyError, match="'pii-detector'"):
        await agent.generate("hello", output_processors=[PIIDetector(model=KEYLESS)])
    workflow = create_workflow(id="checks").then(create_step(ModerationProcessor(model=KEYLESS))).commit()
    with pytest.raises(MissingAPIKeyError, match="'moderation'"):
        await agent.generate("hello", input_processors=[workflow])
    assert model.calls == []


async def test_a_missing_extra_fails_before_the_main_model_too() -> None:
    def needs_extra(model_id: str) -> Any:
        raise MissingExtraError("somesdk", extra="some", feature="SomeModel")

    register_provider("extra-less", needs_extra)
    try:
        model = MockModel([text_step("the answer")])
        agent = Agent("a", model=model, output_processors=[ModerationProcessor(model="extra-less/judge")])
        with pytest.raises(ConfigurationError, match=r"'moderation'.*pip install 'sluicegate\[some\]'"):
            await agent.generate("hello")
        assert model.calls == []
    finally:
        _FACTORIES.pop("extra-less", None)


async def test_a_usable_model_is_resolved_once_and_the_run_goes_on() -> None:
    built: list[str] = []

    def judge(model_id: str) -> Any:
        built.append(model_id)
        return MockModel([text_step('{"flagged": false, "categories": {}}')] * 4)

    def route(model_id: str) -> Any:
        built.append(model_id)
        return MockModel()

    register_provider("judge-co", judge)
    register_provider("route-co", route)
    try:
        model = MockModel([text_step("one"), text_step("two")])
        router = ModelRouterProcessor(routes={"small": "route-co/small"}, rule=lambda text: None)
        agent = Agent(
            "a",
            model=model,
            input_processors=[router],
            output_processors=[ModerationProcessor(model="judge-co/mod", strategy="warn")],
        )
        assert (await agent.generate("hello")).text == "one"
        assert (await agent.generate("again")).text == "two"
        assert sorted(built) == ["mod", "small"]  # each resolved once, at the first run's start
    finally:
        _FACTORIES.pop("judge-co", None)
        _FACTORIES.pop("route-co", None)
