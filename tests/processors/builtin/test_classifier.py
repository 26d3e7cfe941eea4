"""ClassifierProcessor through real Agent runs: the agent's model and the classifier model are
MockModels, the classifier answering canned JSON results."""

from __future__ import annotations

import enum
import json
import logging
from typing import Any, Literal

import pydantic
import pytest

from sluicegate import Agent
from sluicegate.errors import ConfigurationError, ProcessorError
from sluicegate.models.base import CallOptions
from sluicegate.processors import ClassifierProcessor, Processor, ProcessorViolation
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.processors.builtin.classifier import CLASSIFICATION_KEY, Classification
from sluicegate.request_context import RequestContext
from sluicegate.testing import MockModel, text_step

CATEGORIES = ["billing", "technical", "abuse"]


def by_keyword(text: str) -> str | None:
    lowered = text.lower()
    if "invoice" in lowered:
        return "billing"
    if "idiot" in lowered:
        return "abuse"
    if "error" in lowered:
        return "technical"
    return None


def classifier(*answers: dict[str, Any] | str | BaseException) -> MockModel:
    return MockModel(
        [
            a if isinstance(a, BaseException) else text_step(a if isinstance(a, str) else json.dumps(a))
            for a in answers
        ]
    )


def watch(processor: ClassifierProcessor) -> list[ProcessorViolation]:
    seen: list[ProcessorViolation] = []
    processor.on_violation = seen.append
    return seen


def user_texts(options: CallOptions) -> list[str]:
    return [
        p["text"] for m in options.prompt if m["role"] == "user" for p in m["content"] if p["type"] == "text"
    ]


class Peek(Processor):
    """Placed after the classifier: keeps the request context the input ran with."""

    id = "peek"

    def __init__(self) -> None:
        super().__init__()
        self.context = RequestContext()

    def process_input(self, args: ProcessInputArgs) -> None:
        self.context = args.request_context


async def run(processor: ClassifierProcessor, messages: Any) -> tuple[Any, MockModel, RequestContext]:
    main = MockModel([text_step("ok")])
    peek = Peek()
    result = await Agent(name="triage", model=main, input_processors=[processor, peek]).generate(messages)
    return result, main, peek.context


async def test_rule_tags_the_request_context_with_a_typed_result() -> None:
    triage = ClassifierProcessor(categories=CATEGORIES, rule=by_keyword)
    result, main, context = await run(triage, "Where is my invoice?")
    assert result.text == "ok" and user_texts(main.calls[0]) == ["Where is my invoice?"]
    assert context.get(CLASSIFICATION_KEY) == Classification(category="billing", confidence=1.0)


async def test_block_aborts_with_a_tripwire_naming_the_category() -> None:
    triage = ClassifierProcessor(categories=CATEGORIES, rule=by_keyword, actions={"abuse": "block"})
    seen = watch(triage)
    result, main, _ = await run(triage, "You idiot")
    assert main.calls == []
    assert result.tripwire.processor_id == "classifier"
    assert result.tripwire.reason == "Input classified as 'abuse', which is blocked"
    assert result.tripwire.metadata == {
        "category": "abuse",
        "action": "block",
        "classification": {"category": "abuse", "confidence": 1.0, "reason": None},
    }
    assert seen[0].detail == result.tripwire.metadata


async def test_filter_drops_the_message_and_tags() -> None:
    triage = ClassifierProcessor(categories=CATEGORIES, rule=by_keyword, actions={"billing": "filter"})
    seen = watch(triage)
    _, main, context = await run(
        triage, [{"role": "user", "content": "hello"}, {"role": "user", "content": "my invoice"}]
    )
    assert user_texts(main.calls[0]) == ["hello"]
    assert context.get(CLASSIFICATION_KEY).category == "billing"
    assert seen[0].detail["action"] == "filter"


async def test_allow_passes_untagged() -> None:
    triage = ClassifierProcessor(categories=CATEGORIES, rule=by_keyword, actions={"technical": "allow"})
    _, main, context = await run(triage, "I get an error")
    assert len(main.calls) == 1 and CLASSIFICATION_KEY not in context


async def test_default_action_applies_to_unlisted_categories() -> None:
    triage = ClassifierProcessor(
        categories=CATEGORIES, rule=by_keyword, actions={"billing": "tag"}, default_action="block"
    )
    assert (await run(triage, "my invoice"))[0].tripwire is None
    assert (await run(triage, "an error"))[0].tripwire.metadata["category"] == "technical"


async def test_context_key() -> None:
    triage = ClassifierProcessor(categories=CATEGORIES, rule=by_keyword, context_key="triage")
    _, _, context = await run(triage, "my invoice")
    assert context.get("triage").category == "billing" and CLASSIFICATION_KEY not in context


async def test_only_the_latest_new_user_message_is_classified() -> None:
    seen: list[str] = []

    def rule(text: str) -> str:
        seen.append(text)
        return "billing"

    triage = ClassifierProcessor(categories=CATEGORIES, rule=rule)
    await run(
        triage,
        [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "answer"},
            {"role": "user", "content": "second"},
        ],
    )
    assert seen == ["second"]


async def test_unclassifiable_input_is_blocked_by_default() -> None:
    triage = ClassifierProcessor(categories=CATEGORIES, rule=by_keyword)
    result, main, _ = await run(triage, "good morning")
    assert main.calls == []
    assert result.tripwire.reason == (
        "ClassifierProcessor: the rule could not classify the input, so the input is blocked"
    )
    assert result.tripwire.metadata["classified"] is False


async def test_error_strategy_allow_lets_unclassified_input_through(caplog: pytest.LogCaptureFixture) -> None:
    triage = ClassifierProcessor(categories=CATEGORIES, rule=by_keyword, error_strategy="allow")
    seen = watch(triage)
    with caplog.at_level(logging.WARNING):
        result, main, context = await run(triage, "good morning")
    assert result.tripwire is None and len(main.calls) == 1
    assert CLASSIFICATION_KEY not in context
    assert seen[0].detail["error_strategy"] == "allow" and "allowed unclassified" in caplog.text


async def test_a_failing_rule_blocks() -> None:
    def broken(text: str) -> str:
        raise RuntimeError("rule crashed")

    result, main, _ = await run(ClassifierProcessor(categories=CATEGORIES, rule=broken), "hi")
    assert main.calls == [] and "rule crashed" in result.tripwire.reason


@pytest.mark.parametrize("answer", ["medium", 42])
async def test_a_rule_answer_outside_the_categories_is_a_configuration_error(answer: Any) -> None:
    triage = ClassifierProcessor(categories=CATEGORIES, rule=lambda t: answer)
    with pytest.raises(ProcessorError) as raised:
        await run(triage, "hi")
    assert isinstance(raised.value.__cause__, ConfigurationError)


async def test_classifier_model_result() -> None:
    judge = classifier({"category": "technical", "confidence": 0.8, "reason": "an error report"})
    triage = ClassifierProcessor(
        categories=CATEGORIES, classifier=judge, descriptions={"technical": "bugs and errors"}
    )
    _, _, context = await run(triage, "The app crashes")
    assert context.get(CLASSIFICATION_KEY) == Classification(
        category="technical", confidence=0.8, reason="an error report"
    )
    call = judge.calls[0]
    assert "The app crashes" in "".join(user_texts(call))
    system = str(call.prompt[0]["content"])
    assert "- technical: bugs and errors" in system and "- billing\n" in system
    assert call.response_format is not None
    schema = call.response_format["schema"]
    assert schema["properties"]["category"]["enum"] == CATEGORIES and schema["required"] == ["category"]


async def test_the_rule_decides_first_and_the_classifier_only_when_it_cannot() -> None:
    judge = classifier({"category": "technical", "confidence": 0.8})
    triage = ClassifierProcessor(categories=CATEGORIES, rule=by_keyword, classifier=judge)
    assert (await run(triage, "my invoice"))[2].get(CLASSIFICATION_KEY).category == "billing"
    assert judge.calls == []
    assert (await run(triage, "it crashes"))[2].get(CLASSIFICATION_KEY).category == "technical"
    assert len(judge.calls) == 1


@pytest.mark.parametrize(
    "answer", [RuntimeError("provider down"), "no json", {"confidence": 0.8}, {"category": "weather"}]
)
async def test_classifier_failure_blocks_by_default(answer: Any) -> None:
    triage = ClassifierProcessor(categories=CATEGORIES, classifier=classifier(answer))
    result, main, _ = await run(triage, "hi")
    assert main.calls == [] and result.tripwire is not None
    assert result.tripwire.processor_id == "classifier"


@pytest.mark.parametrize("answer", [RuntimeError("provider down"), {"category": "weather"}])
async def test_classifier_failure_with_allow_passes_untagged(answer: Any) -> None:
    triage = ClassifierProcessor(categories=CATEGORIES, classifier=classifier(answer), error_strategy="allow")
    seen = watch(triage)
    result, main, context = await run(triage, "hi")
    assert result.tripwire is None and len(main.calls) == 1
    assert CLASSIFICATION_KEY not in context and len(seen) == 1


class Ticket(pydantic.BaseModel):
    category: Literal["refund", "question"]
    urgent: bool = False
    summary: str | None = None


class Mood(enum.Enum):
    CALM = "calm"
    ANGRY = "angry"


class MoodResult(pydantic.BaseModel):
    category: Mood


async def test_a_pydantic_model_types_the_result() -> None:
    judge = classifier({"category": "refund", "urgent": True, "summary": "wants money back"})
    triage = ClassifierProcessor(categories=Ticket, classifier=judge, actions={"question": "allow"})
    _, _, context = await run(triage, "I want my money back now")
    assert context.get(CLASSIFICATION_KEY) == Ticket(
        category="refund", urgent=True, summary="wants money back"
    )
    assert judge.calls[0].response_format is not None
    schema = judge.calls[0].response_format["schema"]
    assert schema["properties"]["category"]["enum"] == ["refund", "question"]
    assert schema["properties"]["summary"]["anyOf"][0]["maxLength"] == 160


async def test_a_rule_may_return_the_model_or_a_category_name() -> None:
    full = ClassifierProcessor(categories=Ticket, rule=lambda t: Ticket(category="question", summary=t))
    assert (await run(full, "how?"))[2].get(CLASSIFICATION_KEY) == Ticket(category="question", summary="how?")
    named = ClassifierProcessor(categories=Ticket, rule=lambda t: "refund")
    assert (await run(named, "money"))[2].get(CLASSIFICATION_KEY) == Ticket(category="refund")


async def test_an_enum_category() -> None:
    triage = ClassifierProcessor(categories=MoodResult, rule=lambda t: Mood.ANGRY, actions={"angry": "block"})
    result, _, _ = await run(triage, "grr")
    assert result.tripwire.metadata["category"] == "angry"


def test_a_rule_name_the_model_cannot_hold_is_a_configuration_error() -> None:
    class Strict(pydantic.BaseModel):
        category: Literal["a"]
        detail: str

    triage = ClassifierProcessor(categories=Strict, rule=lambda t: "a")
    with pytest.raises(ConfigurationError, match="not a valid Strict"):
        triage._rule_result("a")


async def test_classifier_options_reach_the_call() -> None:
    judge = classifier({"category": "billing"})
    triage = ClassifierProcessor(
        categories=CATEGORIES,
        classifier=judge,
        instructions="Sort it.",
        provider_options={"openai": {"reasoningEffort": "low"}},
        json_prompt_injection=True,
        max_output_tokens=64,
        id="triage",
    )
    result, _, _ = await run(triage, "hi")
    call = judge.calls[0]
    assert str(call.prompt[0]["content"]).startswith("Sort it.")
    assert "matching this JSON schema" in str(call.prompt[0]["content"])
    assert call.provider_options == {"openai": {"reasoningEffort": "low"}} and call.max_output_tokens == 64
    assert triage.id == "triage" and result.tripwire is None


class NoCategory(pydantic.BaseModel):
    label: str


class FreeCategory(pydantic.BaseModel):
    category: str


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"categories": CATEGORIES, "rule": by_keyword, "strategy": "block"}, "unknown option.*strategy"),
        ({"categories": [], "rule": by_keyword}, "non-empty list"),
        ({"categories": "billing", "rule": by_keyword}, "non-empty list"),
        ({"categories": ["a", "a"], "rule": by_keyword}, "distinct"),
        ({"categories": NoCategory, "rule": by_keyword}, "needs a `category` field"),
        ({"categories": FreeCategory, "rule": by_keyword}, "Literal of strings"),
        ({"categories": CATEGORIES}, "needs a `rule`, a `classifier`, or both"),
        ({"categories": CATEGORIES, "rule": "billing"}, "rule must be callable"),
        ({"categories": CATEGORIES, "rule": by_keyword, "actions": {"weather": "block"}}, "unknown category"),
        (
            {"categories": CATEGORIES, "rule": by_keyword, "actions": {"abuse": "deny"}},
            "actions\\['abuse'\\]",
        ),
        ({"categories": CATEGORIES, "rule": by_keyword, "default_action": "warn"}, "default_action"),
        ({"categories": CATEGORIES, "rule": by_keyword, "error_strategy": "fallback"}, "error_strategy"),
        ({"categories": CATEGORIES, "rule": by_keyword, "descriptions": {"x": "y"}}, "unknown categories: x"),
        ({"categories": CATEGORIES, "rule": by_keyword, "context_key": ""}, "context_key"),
        (
            {"categories": CATEGORIES, "rule": by_keyword, "provider_options": {}},
            "provider_options configure",
        ),
        (
            {"categories": CATEGORIES, "rule": by_keyword, "json_prompt_injection": True},
            "json_prompt_injection configure",
        ),
        (
            {"categories": CATEGORIES, "rule": by_keyword, "descriptions": {"abuse": "x"}},
            "descriptions configure",
        ),
        ({"categories": CATEGORIES, "rule": by_keyword, "id": ""}, "id must be"),
        ({"categories": CATEGORIES, "classifier": "nowhere/model"}, "unknown model provider"),
        ({"categories": CATEGORIES, "classifier": 42}, "must be a 'provider/model' string"),
    ],
)
def test_bad_options_are_configuration_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ClassifierProcessor(**options)


async def test_the_embedded_model_gets_a_grammar_sized_schema() -> None:
    judge = MockModel([text_step(json.dumps({"category": "billing", "confidence": 0.9}))], provider="local")
    triage = ClassifierProcessor(categories=CATEGORIES, classifier=judge)
    assert (await run(triage, "hi"))[2].get(CLASSIFICATION_KEY).category == "billing"
    assert judge.calls[0].response_format is not None
    schema = judge.calls[0].response_format["schema"]
    assert schema["properties"]["category"]["enum"] == CATEGORIES
    assert len(schema["properties"]["confidence"]["anyOf"][0]["enum"]) == 21
    assert schema["properties"]["reason"]["anyOf"][0]["maxLength"] == 160


def test_a_result_model_without_a_bounded_answer_is_refused_for_the_embedded_model() -> None:
    class Tagged(pydantic.BaseModel):
        category: Literal["a", "b"]
        tags: list[str]

    with pytest.raises(ConfigurationError, match=r"no longest value|without maxItems"):
        ClassifierProcessor(categories=Tagged, classifier=MockModel(provider="local"))


async def test_a_category_name_fills_a_strict_result_model() -> None:
    class Strict(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        category: Literal["a", "b"]

    triage = ClassifierProcessor(categories=Strict, rule=lambda t: "b")
    assert (await run(triage, "x"))[2].get(CLASSIFICATION_KEY) == Strict(category="b")


async def test_an_async_rule() -> None:
    async def lookup(text: str) -> str:
        return "technical"

    triage = ClassifierProcessor(categories=CATEGORIES, rule=lookup)
    assert (await run(triage, "x"))[2].get(CLASSIFICATION_KEY).category == "technical"
