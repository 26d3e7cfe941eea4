"""ModelRouterProcessor through real Agent runs: the configured, routed and classifier models
are MockModels, the classifier answering canned JSON verdicts."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from sluicegate import Agent, create_tool
from sluicegate.errors import APICallError, ConfigurationError, ProcessorError, UnknownModelError
from sluicegate.models.base import CallOptions
from sluicegate.processors import ModelRouterProcessor, Processor, ProcessorViolation
from sluicegate.processors.args import ProcessInputStepArgs
from sluicegate.processors.builtin.model_router import ROUTE_KEY, ModelRoute
from sluicegate.request_context import RequestContext
from sluicegate.testing import MockModel, text_step, tool_call_step

SHORT = "What time is it?"
LONG = "Please refactor this module, explain each trade-off, and write tests for every branch. " * 2


def by_length(text: str) -> str | None:
    return "simple" if len(text) < 40 else None


def classifier(*answers: dict[str, Any] | str | BaseException) -> MockModel:
    return MockModel(
        [
            a if isinstance(a, BaseException) else text_step(a if isinstance(a, str) else json.dumps(a))
            for a in answers
        ]
    )


def watch(processor: ModelRouterProcessor) -> list[ProcessorViolation]:
    seen: list[ProcessorViolation] = []
    processor.on_violation = seen.append
    return seen


def prompt_text(options: CallOptions) -> str:
    return "".join(p["text"] for m in options.prompt if m["role"] == "user" for p in m["content"])


class Peek(Processor):
    """Placed after the router: keeps the request context its steps ran with."""

    id = "peek"

    def __init__(self) -> None:
        super().__init__()
        self.context = RequestContext()

    def process_input_step(self, args: ProcessInputStepArgs) -> None:
        self.context = args.request_context


async def run(router: ModelRouterProcessor, text: str) -> tuple[MockModel, RequestContext, Any]:
    configured = MockModel([text_step("from the configured model")])
    peek = Peek()
    agent = Agent(name="routed", model=configured, input_processors=[router, peek])
    result = await agent.generate(text)
    return configured, peek.context, result


async def test_rule_routes_the_run_and_records_the_route() -> None:
    simple = MockModel([text_step("from the simple model")])
    router = ModelRouterProcessor(routes={"simple": simple, "complex": MockModel()}, rule=by_length)
    configured, context, result = await run(router, SHORT)
    assert result.text == "from the simple model"
    assert configured.calls == [] and len(simple.calls) == 1
    assert context.get(ROUTE_KEY) == ModelRoute("simple", 1.0, "rule")


async def test_rule_abstaining_keeps_the_configured_model() -> None:
    simple = MockModel([text_step("never")])
    router = ModelRouterProcessor(routes={"simple": simple}, rule=by_length)
    configured, context, result = await run(router, LONG)
    assert result.text == "from the configured model"
    assert simple.calls == [] and len(configured.calls) == 1
    assert ROUTE_KEY not in context


async def test_the_choice_serves_every_step_and_is_made_once() -> None:
    seen: list[str] = []

    def rule(text: str) -> str:
        seen.append(text)
        return "simple"

    lookup = create_tool(
        id="lookup",
        description="lookup",
        input_schema={"type": "object", "properties": {}},
        execute=lambda i, c: "42",
    )
    simple = MockModel([tool_call_step(("c1", "lookup", {})), text_step("done")])
    configured = MockModel([text_step("never")])
    agent = Agent(
        name="routed",
        model=configured,
        tools={"lookup": lookup},
        input_processors=[ModelRouterProcessor(routes={"simple": simple}, rule=rule)],
    )
    result = await agent.generate(SHORT)
    assert result.text == "done"
    assert len(simple.calls) == 2 and configured.calls == []
    assert seen == [SHORT]


async def test_the_latest_user_message_is_classified() -> None:
    seen: list[str] = []
    router = ModelRouterProcessor(
        routes={"simple": MockModel([text_step("x")])}, rule=lambda t: seen.append(t)
    )
    await Agent(name="r", model=MockModel([text_step("ok")]), input_processors=[router]).generate(
        [
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "an answer"},
            {"role": "user", "content": "second question"},
        ]
    )
    assert seen == ["second question"]


async def test_no_user_text_routes_nothing() -> None:
    judge = classifier({"route": "simple", "confidence": 1})
    router = ModelRouterProcessor(routes={"simple": MockModel()}, rule=by_length, classifier=judge)
    configured = MockModel([text_step("ok")])
    agent = Agent(name="r", model=configured, input_processors=[router])
    await agent.generate([{"role": "assistant", "content": "hello"}])
    assert judge.calls == [] and len(configured.calls) == 1


async def test_a_failing_rule_keeps_the_configured_model_and_reports(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(text: str) -> str:
        raise RuntimeError("rule crashed")

    router = ModelRouterProcessor(routes={"simple": MockModel()}, rule=broken)
    seen = watch(router)
    with caplog.at_level(logging.WARNING):
        _, _, result = await run(router, SHORT)
    assert result.text == "from the configured model"
    assert "rule crashed" in seen[0].message and seen[0].detail["routed"] is False
    assert "the configured model serves the run" in caplog.text


async def test_a_rule_naming_an_unknown_route_is_a_configuration_error() -> None:
    router = ModelRouterProcessor(routes={"simple": MockModel()}, rule=lambda t: "medium")
    with pytest.raises(ProcessorError, match="'medium', which is not a route") as raised:
        await run(router, SHORT)
    assert isinstance(raised.value.__cause__, ConfigurationError)


async def test_classifier_routes_when_confident() -> None:
    complex_model = MockModel([text_step("deep answer")])
    judge = classifier({"route": "complex", "confidence": 0.9})
    router = ModelRouterProcessor(
        routes={"simple": MockModel(), "complex": complex_model},
        classifier=judge,
        descriptions={"complex": "code and multi-step reasoning"},
    )
    configured, context, result = await run(router, LONG)
    assert result.text == "deep answer" and configured.calls == []
    assert context.get(ROUTE_KEY) == ModelRoute("complex", 0.9, "classifier")
    call = judge.calls[0]
    assert LONG.strip() in prompt_text(call)
    system = str(call.prompt[0]["content"])
    assert "- simple\n" in system and "- complex: code and multi-step reasoning" in system
    assert call.response_format is not None
    schema = call.response_format["schema"]
    assert schema["properties"]["route"]["enum"] == ["simple", "complex"]
    assert schema["required"] == ["route"] and call.temperature == 0


async def test_rule_first_then_classifier() -> None:
    judge = classifier({"route": "complex", "confidence": 0.8})
    simple, complex_model = MockModel([text_step("s")]), MockModel([text_step("c")])
    router = ModelRouterProcessor(
        routes={"simple": simple, "complex": complex_model}, rule=by_length, classifier=judge
    )
    assert (await run(router, SHORT))[2].text == "s"
    assert judge.calls == []
    assert (await run(router, LONG))[2].text == "c"
    assert len(judge.calls) == 1


@pytest.mark.parametrize(
    ("min_confidence", "confidence", "routed"),
    [(None, 0.59, False), (None, 0.6, True), (0.9, 0.85, False), (0.0, 0.1, True)],
)
async def test_min_confidence(min_confidence: float | None, confidence: float, routed: bool) -> None:
    options: dict[str, Any] = {} if min_confidence is None else {"min_confidence": min_confidence}
    router = ModelRouterProcessor(
        routes={"simple": MockModel([text_step("s")])},
        classifier=classifier({"route": "simple", "confidence": confidence}),
        **options,
    )
    seen = watch(router)
    result = (await run(router, SHORT))[2]
    assert result.text == ("s" if routed else "from the configured model")
    if not routed:
        assert seen[0].detail["low_confidence"] is True and seen[0].detail["confidence"] == confidence


async def test_an_answer_without_confidence_abstains_unless_min_confidence_is_zero() -> None:
    def router(min_confidence: float) -> ModelRouterProcessor:
        return ModelRouterProcessor(
            routes={"simple": MockModel([text_step("s")])},
            classifier=classifier({"route": "simple"}),
            min_confidence=min_confidence,
        )

    assert (await run(router(0.6), SHORT))[2].text == "from the configured model"
    _, context, result = await run(router(0), SHORT)
    assert result.text == "s" and context.get(ROUTE_KEY) == ModelRoute("simple", 1.0, "classifier")


@pytest.mark.parametrize(
    "answer",
    [
        RuntimeError("provider down"),
        "not json at all",
        {"confidence": 0.9},
        {"route": "medium", "confidence": 1},
    ],
)
async def test_classifier_failure_keeps_the_configured_model(answer: Any) -> None:
    router = ModelRouterProcessor(routes={"simple": MockModel()}, classifier=classifier(answer))
    seen = watch(router)
    _, context, result = await run(router, SHORT)
    assert result.text == "from the configured model"
    assert ROUTE_KEY not in context
    assert len(seen) == 1 and seen[0].detail["routed"] is False


async def test_a_misconfigured_classifier_is_an_error_not_a_silent_abstention() -> None:
    denied = APICallError("unauthorized", status_code=401, is_retryable=False)
    router = ModelRouterProcessor(routes={"simple": MockModel()}, classifier=classifier(denied))
    with pytest.raises(ProcessorError, match="HTTP 401") as raised:
        await run(router, SHORT)
    assert isinstance(raised.value.__cause__, ConfigurationError)


async def test_instructions_and_provider_options_reach_the_classifier() -> None:
    judge = classifier({"route": "simple", "confidence": 1})
    router = ModelRouterProcessor(
        routes={"simple": MockModel([text_step("s")])},
        classifier=judge,
        instructions="Route it.",
        provider_options={"openai": {"reasoningEffort": "low"}},
        json_prompt_injection=True,
        max_output_tokens=64,
    )
    await run(router, SHORT)
    call = judge.calls[0]
    system = str(call.prompt[0]["content"])
    assert system.startswith("Route it.") and "matching this JSON schema" in system
    assert call.provider_options == {"openai": {"reasoningEffort": "low"}}
    assert call.max_output_tokens == 64


async def test_id_option() -> None:
    router = ModelRouterProcessor(routes={"simple": MockModel()}, rule=by_length, id="tier-router")
    assert router.id == "tier-router"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"routes": {"a": "openai/gpt-5"}, "rule": by_length, "fallback": "x"}, "unknown option.*fallback"),
        ({"routes": {}, "rule": by_length}, "routes must be a non-empty mapping"),
        ({"routes": ["openai/gpt-5"], "rule": by_length}, "routes must be a non-empty mapping"),
        ({"routes": {"": "openai/gpt-5"}, "rule": by_length}, "route names must be non-empty"),
        ({"routes": {"a": 42}, "rule": by_length}, "route 'a' must map to"),
        ({"routes": {"a": "openai/gpt-5"}}, "needs a `rule`, a `classifier`, or both"),
        ({"routes": {"a": "openai/gpt-5"}, "rule": "simple"}, "rule must be callable"),
        (
            {"routes": {"a": "openai/gpt-5"}, "rule": by_length, "descriptions": {"b": "x"}},
            "unknown route.*b",
        ),
        ({"routes": {"a": "openai/gpt-5"}, "rule": by_length, "min_confidence": 1.5}, "min_confidence"),
        ({"routes": {"a": "openai/gpt-5"}, "rule": by_length, "min_confidence": True}, "min_confidence"),
        ({"routes": {"a": "openai/gpt-5"}, "rule": by_length, "instructions": "x"}, "instructions configure"),
        (
            {"routes": {"a": "openai/gpt-5"}, "rule": by_length, "descriptions": {"a": "x"}},
            "descriptions configure",
        ),
        (
            {"routes": {"a": "openai/gpt-5"}, "rule": by_length, "max_output_tokens": 64},
            "max_output_tokens configure",
        ),
        ({"routes": {"a": "openai/gpt-5"}, "rule": by_length, "id": ""}, "id must be"),
        (
            {"routes": {"a": "openai/gpt-5"}, "classifier": "openai/gpt-5", "max_output_tokens": 0},
            "max_output",
        ),
    ],
)
def test_bad_options_are_configuration_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ModelRouterProcessor(**options)


@pytest.mark.parametrize(
    ("routes", "classifier_model"),
    [({"a": "nowhere/model"}, None), ({"a": "gpt-5"}, None), ({"a": "openai/gpt-5"}, "nowhere/model")],
)
def test_unknown_model_strings_are_refused_when_built(
    routes: dict[str, str], classifier_model: str | None
) -> None:
    with pytest.raises(UnknownModelError):
        ModelRouterProcessor(routes=routes, rule=by_length, classifier=classifier_model)


async def test_the_embedded_model_gets_a_grammar_sized_schema() -> None:
    """`local/...` judges answer under a llama.cpp grammar: the route is an enum and the
    confidence a choice on the score grid, so every answer the grammar allows is a valid one."""
    judge = MockModel([text_step(json.dumps({"route": "simple", "confidence": 0.75}))], provider="local")
    router = ModelRouterProcessor(routes={"simple": MockModel([text_step("s")])}, classifier=judge)
    assert (await run(router, SHORT))[2].text == "s"
    assert judge.calls[0].response_format is not None
    schema = judge.calls[0].response_format["schema"]
    assert schema["properties"]["route"]["enum"] == ["simple"]
    grid = schema["properties"]["confidence"]["anyOf"][0]["enum"]
    assert 0.75 in grid and len(grid) == 21


def test_a_token_cap_too_small_for_a_verdict_on_the_embedded_model_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="max_output_tokens=8"):
        ModelRouterProcessor(
            routes={"simple": MockModel()}, classifier=MockModel(provider="local"), max_output_tokens=8
        )


async def test_an_async_rule() -> None:
    async def lookup(text: str) -> str | None:
        return "simple"

    router = ModelRouterProcessor(routes={"simple": MockModel([text_step("s")])}, rule=lookup)
    assert (await run(router, SHORT))[2].text == "s"
