"""ModelSelectionProcessor (Mastra's options: choices or select, scope, on_decision,
min_probability) and the fallback rule it shares with ModelRouterProcessor: a chosen model that
fails is followed by the agent's fallback models, and the choice stops for the rest of the run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate import Agent, create_tool
from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.processors import (
    ClassifierProcessor,
    ModelRouterProcessor,
    ModelSelectionDecision,
    ModelSelectionProcessor,
)
from sluicegate.testing import MockModel, text_step, tool_call_step


def judge(*answers: dict[str, Any] | BaseException) -> MockModel:
    return MockModel([a if isinstance(a, BaseException) else text_step(json.dumps(a)) for a in answers])


def named(steps: list[Any], model_id: str) -> MockModel:
    return MockModel(steps, model_id=model_id)


def down() -> APICallError:
    return APICallError("Service unavailable", status_code=503, is_retryable=True)


def selector(classifier: MockModel, small: Any, big: Any, **options: Any) -> ModelSelectionProcessor:
    return ModelSelectionProcessor(
        model=classifier,
        choices=[
            {"model": small, "criteria": "greetings and short factual questions", "name": "small"},
            {"model": big, "criteria": "reasoning, code, multi-step tasks", "name": "big"},
        ],
        **options,
    )


async def test_choices_route_every_step_and_report_the_decision() -> None:
    decisions: list[ModelSelectionDecision] = []
    small = named([tool_call_step(("c1", "clock", {})), text_step("it is noon")], "small")
    configured = named([], "configured")
    classifier = judge({"choice": "small", "probabilities": {"small": 0.9, "big": 0.1}})
    clock = create_tool(id="clock", description="time", execute=lambda a, c: "12:00")
    agent = Agent(
        "a",
        model=configured,
        tools=[clock],
        input_processors=[selector(classifier, small, named([], "big"), on_decision=decisions.append)],
    )
    result = await agent.generate("what time is it?")
    assert result.text == "it is noon" and len(small.calls) == 2 and configured.calls == []
    assert len(classifier.calls) == 1  # classified once per request
    assert "what time is it?" in json.dumps(classifier.calls[0].prompt)
    assert decisions == [ModelSelectionDecision(model=small, choice="small", probability=0.9)]


async def test_first_step_scope_routes_only_the_opening_call() -> None:
    small = named([tool_call_step(("c1", "clock", {}))], "small")
    configured = named([text_step("from the configured model")], "configured")
    clock = create_tool(id="clock", description="time", execute=lambda a, c: "12:00")
    classifier = judge({"choice": "small"})
    agent = Agent(
        "a",
        model=configured,
        tools=[clock],
        input_processors=[selector(classifier, small, named([], "big"), scope="first-step")],
    )
    result = await agent.generate("what time is it?")
    assert len(small.calls) == 1 and len(configured.calls) == 1
    assert result.text == "from the configured model"


@pytest.mark.parametrize(
    ("answer", "minimum", "abstained"),
    [
        ({"choice": "small", "probabilities": {"small": 0.4}}, 0.6, "below-threshold"),
        ({"choice": "small"}, 0.6, "below-threshold"),  # no distribution: a threshold cannot pass
        (ConnectionError("judge down"), None, "error"),
    ],
)
async def test_it_abstains_when_unsure_or_failing(answer: Any, minimum: float | None, abstained: str) -> None:
    decisions: list[ModelSelectionDecision] = []
    configured = named([text_step("configured")], "configured")
    processor = selector(
        judge(answer),
        named([], "small"),
        named([], "big"),
        min_probability=minimum,
        on_decision=decisions.append,
    )
    result = await Agent("a", model=configured, input_processors=[processor]).generate("hi")
    assert result.text == "configured"
    assert [d.abstained for d in decisions] == [abstained] and decisions[0].model is None


async def test_select_form_gets_the_classifiers_typed_result() -> None:
    seen: list[Any] = []
    big = named([text_step("from big")], "big")

    def select(result: Any, context: dict[str, Any]) -> Any:
        seen.append((result.category, context["result"] is result))
        return big if result.category == "technical" else None

    triage = ClassifierProcessor(categories=["billing", "technical"], rule=lambda text: "technical")
    processor = ModelSelectionProcessor(classifier=triage, select=select)
    result = await Agent("a", model=named([], "configured"), input_processors=[processor]).generate("my code")
    assert result.text == "from big" and seen == [("technical", True)]


async def test_on_decision_errors_never_fail_the_request() -> None:
    def boom(decision: ModelSelectionDecision) -> None:
        raise RuntimeError("logging is down")

    small = named([text_step("small")], "small")
    processor = selector(judge({"choice": "small"}), small, named([], "big"), on_decision=boom)
    result = await Agent("a", model=named([], "configured"), input_processors=[processor]).generate("hi")
    assert result.text == "small"


async def test_a_failing_choice_falls_over_to_the_agents_fallbacks_and_routing_stops() -> None:
    small = named([down()], "small")
    primary = named([], "primary")  # the chosen model takes its place: it is not asked
    backup = named([tool_call_step(("c1", "clock", {})), text_step("from the backup")], "backup")
    clock = create_tool(id="clock", description="time", execute=lambda a, c: "12:00")
    processor = selector(judge({"choice": "small"}), small, named([], "big"))
    agent = Agent(
        "a",
        model=[{"model": primary, "max_retries": 0}, {"model": backup, "max_retries": 0}],
        tools=[clock],
        input_processors=[processor],
    )
    result = await agent.generate("hi", max_retries=0)
    assert result.error is None and result.text == "from the backup"
    assert len(small.calls) == 1  # failed once; the next step was not routed back to it
    assert primary.calls == [] and len(backup.calls) == 2
    assert [s.model for s in result.steps] == ["mock-provider/backup", "mock-provider/backup"]


async def test_the_router_keeps_the_agents_fallbacks_the_same_way() -> None:
    simple = named([down()], "simple")
    backup = named([tool_call_step(("c1", "clock", {})), text_step("from the backup")], "backup")
    clock = create_tool(id="clock", description="time", execute=lambda a, c: "12:00")
    router = ModelRouterProcessor(routes={"simple": simple}, rule=lambda text: "simple")
    agent = Agent(
        "a",
        model=[{"model": named([], "primary"), "max_retries": 0}, {"model": backup, "max_retries": 0}],
        tools=[clock],
        input_processors=[router],
    )
    result = await agent.generate("hi", max_retries=0)
    assert result.text == "from the backup" and len(simple.calls) == 1 and len(backup.calls) == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"model": "openai/gpt-5-nano", "choices": [{"model": "openai/gpt-5", "criteria": "x"}]},
            "two choices",
        ),
        (
            {
                "model": "openai/gpt-5-nano",
                "choices": [
                    {"model": "openai/gpt-5", "criteria": "x"},
                    {"model": "openai/gpt-5", "criteria": "y"},
                ],
            },
            "two choices named 'openai/gpt-5'",
        ),
        (
            {
                "model": "openai/gpt-5-nano",
                "choices": [
                    {"model": "openai/gpt-5", "criteria": " "},
                    {"model": "openai/o3", "criteria": "y"},
                ],
            },
            "no criteria",
        ),
        ({"classifier": object(), "select": lambda r, c: None}, "ClassifierProcessor"),
        ({"model": "openai/gpt-5-nano"}, "needs `model` and `choices`"),
        (
            {
                "model": "openai/gpt-5-nano",
                "choices": [
                    {"model": "openai/gpt-5", "criteria": "x"},
                    {"model": "openai/o3", "criteria": "y"},
                ],
                "scope": "every-step",
            },
            "scope",
        ),
    ],
)
def test_bad_options_are_named(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ModelSelectionProcessor(**options)
