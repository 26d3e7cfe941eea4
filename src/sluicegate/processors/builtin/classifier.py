"""`ClassifierProcessor`: a typed classification of the request's input — by a deterministic
rule, a small classifier model, or both — that blocks, filters or tags the request per
category. Like the other guardrails it fails closed: an input it cannot classify is blocked
unless `error_strategy` says otherwise."""

from __future__ import annotations

import enum
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_args

import pydantic

from sluicegate.errors import ConfigurationError
from sluicegate.guardrails.detector import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DetectorModel,
    Verdict,
    judged,
    refuse_detector_options,
)
from sluicegate.guardrails.judge_schema import JudgeLimits
from sluicegate.guardrails.message_checks import input_ids, message_text, to_check
from sluicegate.guardrails.violations import report
from sluicegate.messages import Message
from sluicegate.models.base import LanguageModel
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.processors.base import Processor
from sluicegate.processors.option_check import checked_id

log = logging.getLogger(__name__)

ClassifierAction = Literal["block", "filter", "tag", "allow"]
ClassifierErrorStrategy = Literal["block", "allow"]

CLASSIFICATION_KEY = "sluicegate__classification"
"""The default `request_context` key of the typed classification (see `context_key`)."""

ClassifierRule = Callable[[str], Any]
"""`rule(text)`: a category name, a result of the `categories` model, or None (cannot tell); an
async function may be the rule."""


class Classification(Verdict):
    """The typed result when `categories` is a list of names."""

    category: str = pydantic.Field(
        description="The category that fits the content, from the list of categories"
    )
    confidence: float | None = pydantic.Field(
        default=None, ge=0, le=1, description="Confidence between 0 and 1 that the category fits"
    )
    reason: str | None = pydantic.Field(default=None, description="Brief explanation of the choice")


def default_instructions(categories: Mapping[str, str | None]) -> str:
    listed = "\n".join(f"- {name}: {text}" if text else f"- {name}" for name, text in categories.items())
    return (
        "You classify text. Read the content and choose exactly one of these categories:\n"
        f"{listed}\n\nAnswer with the category's name, your confidence between 0 and 1, and a brief reason."
    )


class ClassifierProcessor(Processor):
    """Classifies the request's latest input message and acts on the category.

    `categories` is a list of category names (the result is a `Classification`: `category`,
    `confidence`, `reason`) or a pydantic model with a `category` field typed as a `Literal` of
    names or an `Enum` (the result is that model, as the classifier filled it in). The result
    comes from `rule(text)` (deterministic, offline; a category name, a result, or None when it
    cannot tell) and, when the rule cannot tell or there is none, from `classifier`, a small
    model answering in the result's JSON schema (categories described by `descriptions`).

    `actions` maps categories to what happens (`default_action`, `"tag"`, for the rest):
    `"block"` aborts the run with a tripwire naming the category (its metadata carries the
    result), `"filter"` drops the message, `"tag"` lets it through, and `"allow"` lets it
    through untagged. Except on `"allow"`, the typed result is set in `request_context` under
    `context_key` (`CLASSIFICATION_KEY`), where tools, later processors and `prepare_step` read it.

    When the input cannot be classified (the classifier call fails or its answer is not a valid
    result, the rule raises, or nothing decides), `error_strategy` says: `"block"` (default)
    aborts, `"allow"` lets it through untagged (logged at WARNING and reported to
    `on_violation`). The rule is asked first, so it never stands in for a failed classifier.
    A misconfigured classifier (unknown provider, missing key) is an error, never a pass.

    Example::

        triage = ClassifierProcessor(
            categories=["billing", "technical", "abuse"],
            classifier="openai/gpt-5-nano",
            actions={"abuse": "block"},
        )
        agent = Agent(name="support", model="openai/gpt-5", input_processors=[triage])
        # A tool then reads request_context.get(CLASSIFICATION_KEY).category
    """

    id = "classifier"
    name = "Classifier"

    def __init__(
        self,
        *,
        categories: Sequence[str] | type[pydantic.BaseModel],
        rule: ClassifierRule | None = None,
        classifier: str | LanguageModel | None = None,
        actions: Mapping[str, ClassifierAction] | None = None,
        default_action: ClassifierAction = "tag",
        error_strategy: ClassifierErrorStrategy = "block",
        context_key: str = CLASSIFICATION_KEY,
        descriptions: Mapping[str, str] | None = None,
        instructions: str | None = None,
        provider_options: dict[str, Any] | None = None,
        json_prompt_injection: bool = False,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
        id: str | None = None,
    ) -> None:
        super().__init__()
        if id is not None:
            self.id = checked_id("ClassifierProcessor", id)
        self.result_type, self.categories = _result_type(categories)
        if rule is None and classifier is None:
            raise ConfigurationError("ClassifierProcessor needs a `rule`, a `classifier`, or both")
        if rule is not None and not callable(rule):
            raise ConfigurationError(f"ClassifierProcessor: rule must be callable, got {rule!r}")
        self.rule = rule
        _check_choice("default_action", default_action, get_args(ClassifierAction))
        _check_choice("error_strategy", error_strategy, get_args(ClassifierErrorStrategy))
        self.default_action: ClassifierAction = default_action
        self.error_strategy: ClassifierErrorStrategy = error_strategy
        self.actions: dict[str, ClassifierAction] = {}
        for category, action in (actions or {}).items():
            if category not in self.categories:
                raise ConfigurationError(
                    f"ClassifierProcessor: actions name unknown category {category!r} "
                    f"(categories: {', '.join(self.categories)})"
                )
            _check_choice(f"actions[{category!r}]", action, get_args(ClassifierAction))
            self.actions[category] = action
        unknown_described = sorted(set(descriptions or {}) - set(self.categories))
        if unknown_described:
            raise ConfigurationError(
                f"ClassifierProcessor: descriptions name unknown categories: {', '.join(unknown_described)}"
            )
        if not isinstance(context_key, str) or not context_key:
            raise ConfigurationError(
                f"ClassifierProcessor: context_key must be a non-empty string, got {context_key!r}"
            )
        self.context_key = context_key
        self.detector: DetectorModel[pydantic.BaseModel] | None = None
        if classifier is not None:
            described = {name: (descriptions or {}).get(name) for name in self.categories}
            schema = self.result_type.model_json_schema()
            strings = [
                name
                for name, prop in schema.get("properties", {}).items()
                if name != "category" and _is_string(prop)
            ]
            try:
                self.detector = DetectorModel(
                    classifier,
                    instructions=instructions or default_instructions(described),
                    schema=self.result_type,
                    judge_limits=JudgeLimits(
                        order=("category", *(n for n in schema.get("properties", {}) if n != "category")),
                        enums={"category": self.categories},
                        lengths=dict.fromkeys(strings, 160),
                    ),
                    schema_name="classification",
                    provider_options=provider_options,
                    json_prompt_injection=json_prompt_injection,
                    label="ClassifierProcessor",
                    max_output_tokens=max_output_tokens,
                )
            except (ValueError, TypeError) as exc:
                raise ConfigurationError(str(exc)) from exc
        else:
            refuse_detector_options(
                "ClassifierProcessor",
                descriptions=descriptions,
                instructions=instructions,
                provider_options=provider_options,
                json_prompt_injection=json_prompt_injection,
                max_output_tokens=max_output_tokens,
            )

    def action_for(self, category: str) -> ClassifierAction:
        return self.actions.get(category, self.default_action)

    async def process_input(self, args: ProcessInputArgs) -> list[Message] | None:
        checked = [m for m in to_check(args.messages, input_ids(args), roles=("user",)) if message_text(m)]
        if not checked:
            return None
        message = checked[-1]
        result = await self.classify(message_text(message), args.abort)
        if result is None:
            return None
        category = category_of(result)
        action = self.action_for(category)
        detail = {"category": category, "action": action, "classification": result.model_dump(mode="json")}
        if action == "block":
            args.abort(f"Input classified as {category!r}, which is blocked", metadata=detail)
        if action == "allow":
            return None
        args.request_context.set(self.context_key, result)
        if action == "filter":
            log.info("[ClassifierProcessor] input classified as %r; message dropped", category)
            report(self, f"Input classified as {category!r}; message dropped", detail)
            return [m for m in args.messages if m.id != message.id]
        return None

    async def classify(self, text: str, abort: Any) -> pydantic.BaseModel | None:
        """The typed result for `text`; None when it passes unclassified (`error_strategy="allow"`)."""
        if self.rule is not None:
            try:
                answer = self.rule(text)
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception as exc:
                self._unclassified(f"the rule failed ({type(exc).__name__}: {exc})", abort)
                return None
            if answer is not None:
                return self._rule_result(answer)
        if self.detector is None:
            self._unclassified("the rule could not classify the input", abort)
            return None
        verdict = await judged(
            self,
            self.detector,
            f'Classify the following content:\n\nContent: "{text}"',
            error_strategy=self.error_strategy,
        )
        if verdict is None:
            return None
        if category_of(verdict) not in self.categories:
            self._unclassified(f"the classifier answered an unknown category {category_of(verdict)!r}", abort)
            return None
        return verdict

    def _rule_result(self, answer: Any) -> pydantic.BaseModel:
        if isinstance(answer, self.result_type):
            result: pydantic.BaseModel = answer
        elif isinstance(answer, str | enum.Enum):
            try:
                fields: dict[str, Any] = {"category": answer}
                if self.result_type is Classification:
                    fields["confidence"] = 1.0
                result = self.result_type.model_validate(fields)
            except pydantic.ValidationError as exc:
                raise ConfigurationError(
                    f"ClassifierProcessor: the rule returned {answer!r}, which is not a valid "
                    f"{self.result_type.__name__}: {exc.errors()[0]['msg']}"
                ) from exc
        else:
            raise ConfigurationError(
                f"ClassifierProcessor: the rule must return a category name, a {self.result_type.__name__} "
                f"or None, got {answer!r}"
            )
        if category_of(result) not in self.categories:
            raise ConfigurationError(
                f"ClassifierProcessor: the rule returned {category_of(result)!r}, which is not a category "
                f"(categories: {', '.join(self.categories)})"
            )
        return result

    def _unclassified(self, why: str, abort: Any) -> None:
        detail = {"error": why, "error_strategy": self.error_strategy, "classified": False}
        if self.error_strategy == "block":
            abort(f"ClassifierProcessor: {why}, so the input is blocked", metadata=detail)
        log.warning("[ClassifierProcessor] %s; input allowed unclassified", why)
        report(self, f"ClassifierProcessor: {why}; input allowed unclassified", detail)


def category_of(result: pydantic.BaseModel) -> str:
    value = getattr(result, "category", None)
    return str(value.value) if isinstance(value, enum.Enum) else str(value)


def _result_type(categories: Any) -> tuple[type[pydantic.BaseModel], tuple[str, ...]]:
    if isinstance(categories, type) and issubclass(categories, pydantic.BaseModel):
        schema = categories.model_json_schema()
        prop = schema.get("properties", {}).get("category")
        if prop is None:
            raise ConfigurationError(
                f"ClassifierProcessor: the categories model {categories.__name__} needs a `category` field"
            )
        if "$ref" in prop:
            prop = schema.get("$defs", {}).get(prop["$ref"].rsplit("/", 1)[-1], {})
        names = prop.get("enum") or ([prop["const"]] if "const" in prop else None)
        if not names or not all(isinstance(n, str) for n in names):
            raise ConfigurationError(
                f"ClassifierProcessor: {categories.__name__}.category must be a Literal of strings or a "
                "string Enum, so the categories are known"
            )
        return categories, tuple(names)
    if isinstance(categories, str) or not isinstance(categories, Sequence) or not categories:
        raise ConfigurationError(
            "ClassifierProcessor: categories must be a non-empty list of category names or a pydantic "
            f"model with a `category` field, got {categories!r}"
        )
    names = tuple(categories)
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise ConfigurationError(
            f"ClassifierProcessor: categories must be distinct non-empty strings, got {list(names)!r}"
        )
    return Classification, names


def _is_string(prop: Mapping[str, Any]) -> bool:
    branches = prop.get("anyOf", [prop])
    return any(b.get("type") == "string" for b in branches)


def _check_choice(option: str, value: Any, choices: Sequence[str]) -> None:
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ConfigurationError(f"ClassifierProcessor: {option} must be one of {listed}, got {value!r}")
