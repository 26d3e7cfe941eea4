"""`ModelSelectionProcessor`: Mastra's model selection. The request's latest user message is
classified once, before the first model call; the model that fits it serves the run (or its
first call), and when that model fails the agent's fallback models take over.

Routing is a swap, not a check: a wrong choice has no in-band recovery, so the processor
abstains (the agent's configured model, which should be the capable one, serves) whenever it
is unsure or the classification fails.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pydantic

from sluicegate.errors import ConfigurationError, TripWire
from sluicegate.guardrails.detector import DEFAULT_MAX_OUTPUT_TOKENS, DetectorError, DetectorModel, Verdict
from sluicegate.guardrails.judge_schema import JudgeLimits
from sluicegate.models.base import LanguageModel
from sluicegate.processors.args import ProcessInputArgs, ProcessInputStepArgs, ProcessInputStepResult
from sluicegate.processors.base import Processor
from sluicegate.processors.builtin.model_router import fell_back, latest_user_text
from sluicegate.processors.option_check import checked_id

log = logging.getLogger(__name__)

Scope = Literal["run", "first-step"]
Abstained = Literal["below-threshold", "no-text", "error", "no-model-for-choice"]

DEFAULT_INSTRUCTIONS = (
    "Choose the least capable model that can handle this request correctly and safely. Prefer a "
    "cheaper model when the request is straightforward, and only choose a more capable model "
    "when the request genuinely requires it."
)
_STATE_KEY = "model_selection"


@dataclass(frozen=True, slots=True)
class ModelSelectionDecision:
    """What `on_decision` receives, once per request: the model that will serve and the choice
    it came from (with its probability, when the classifier gave one), or why it abstained."""

    model: Any = None
    choice: str | None = None
    probability: float | None = None
    abstained: Abstained | None = None


class ChoiceVerdict(Verdict):
    choice: str = pydantic.Field(description="The name of the choice whose criteria fit the request")
    probabilities: dict[str, float] | None = pydantic.Field(
        default=None, description="For each choice name, the probability (0 to 1) that it is the right one"
    )


Select = Callable[[Any, dict[str, Any]], "Awaitable[Any] | Any"]
"""`select(result, {"result": result})`: the model for the classifier's typed result, or None."""


class ModelSelectionProcessor(Processor):
    """Chooses the model for a request by classifying its latest user message.

    Two forms, as in Mastra:

    - `model=` (the evaluation model) and `choices=[{"model": ..., "criteria": ..., "name": ...}]`
      (at least two; `name` defaults to the model's string or id and must be unique; the
      criteria say which requests the model is for). The classifier answers a choice and,
      ideally, a probability per choice; with `min_probability` the processor abstains when the
      chosen one's probability is lower, or missing. `instructions` replaces the default
      objective (the least capable model that handles the request).
    - `classifier=` (a `ClassifierProcessor`) and `select=`: `select(result, {"result": result})`
      gets its typed result and returns a model, or None to abstain.

    `scope`: `"run"` (default) routes every step; `"first-step"` only the opening call.
    `on_decision(decision)` hears each request's `ModelSelectionDecision`, abstentions included
    (its exceptions are logged and swallowed). The classification runs in `process_input`; a
    failure abstains (fail open: routing is an optimisation).

    The chosen model takes the configured model's place in the agent's fallback list: when it
    fails, the fallback models after the configured one serve, and the processor stops
    overriding for the rest of the run (in a durable run a chosen model serves alone). Put it in
    `input_processors`; do not attach two model-choosing processors to one agent.

    Example::

        selector = ModelSelectionProcessor(
            model="openai/gpt-5-nano",
            choices=[{"model": "openai/gpt-5-nano", "criteria": "greetings, short factual questions"},
                     {"model": "openai/gpt-5", "criteria": "reasoning, code, multi-step tasks"}],
        )
        agent = Agent(name="support", model=["openai/gpt-5", "anthropic/claude-sonnet-4-5"],
                      input_processors=[selector])
    """

    id = "model-selection"
    name = "model-selection"
    description = "Chooses the model for a request by classifying its latest user message."

    def __init__(
        self,
        *,
        model: str | LanguageModel | None = None,
        choices: Sequence[Mapping[str, Any]] | None = None,
        instructions: str | None = None,
        min_probability: float | None = None,
        classifier: Any = None,
        select: Select | None = None,
        scope: Scope = "run",
        on_decision: Callable[[ModelSelectionDecision], Any] | None = None,
        provider_options: dict[str, Any] | None = None,
        json_prompt_injection: bool = False,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
        id: str | None = None,
    ) -> None:
        super().__init__()
        if id is not None:
            self.id = checked_id("ModelSelectionProcessor", id)
        if scope not in ("run", "first-step"):
            raise ConfigurationError(
                f"ModelSelectionProcessor: scope must be 'run' or 'first-step', got {scope!r}"
            )
        if on_decision is not None and not callable(on_decision):
            raise ConfigurationError(
                f"ModelSelectionProcessor: on_decision must be callable, got {on_decision!r}"
            )
        self.scope: Scope = scope
        self.on_decision = on_decision
        self.models: dict[str, Any] = {}
        self.detector: DetectorModel[ChoiceVerdict] | None = None
        self.classifier = classifier
        self.select = select
        self.min_probability: float | None = None
        if choices is not None:
            if classifier is not None or select is not None:
                raise ConfigurationError(
                    "ModelSelectionProcessor: give `model` and `choices`, or `classifier` and `select`, "
                    "not both"
                )
            self._choices_form(
                model,
                choices,
                instructions,
                min_probability,
                provider_options,
                json_prompt_injection,
                max_output_tokens,
            )
        else:
            if classifier is None or select is None or not callable(select):
                raise ConfigurationError(
                    "ModelSelectionProcessor needs `model` and `choices`, or `classifier` and a "
                    "callable `select`"
                )
            if not callable(getattr(classifier, "classify", None)):
                raise ConfigurationError(
                    "ModelSelectionProcessor: classifier must be a ClassifierProcessor (an object with "
                    f"`classify(text, abort)`), got {classifier!r}"
                )
            for name, value in (
                ("model", model),
                ("instructions", instructions),
                ("min_probability", min_probability),
            ):
                if value is not None:
                    raise ConfigurationError(f"ModelSelectionProcessor: `{name}` belongs to the choices form")

    def _choices_form(
        self,
        model: Any,
        choices: Sequence[Mapping[str, Any]],
        instructions: str | None,
        min_probability: float | None,
        provider_options: dict[str, Any] | None,
        json_prompt_injection: bool,
        max_output_tokens: int | None,
    ) -> None:
        if (
            isinstance(choices, (str, bytes, Mapping))
            or not isinstance(choices, Sequence)
            or len(choices) < 2
        ):
            raise ConfigurationError(
                f"ModelSelectionProcessor {self.id!r} needs at least two choices to route between, "
                f"got {choices!r}"
            )
        criteria: dict[str, str] = {}
        for index, choice in enumerate(choices):
            if not isinstance(choice, Mapping) or "model" not in choice:
                raise ConfigurationError(
                    f"ModelSelectionProcessor: choices[{index}] must be a mapping with 'model' and 'criteria'"
                )
            unknown = set(choice) - {"model", "criteria", "name"}
            if unknown:
                raise ConfigurationError(
                    f"ModelSelectionProcessor: choices[{index}] has unknown keys {sorted(unknown)}"
                )
            name = choice.get("name") or _label(choice["model"])
            if name in self.models:
                raise ConfigurationError(
                    f"ModelSelectionProcessor {self.id!r} has two choices named {name!r}; "
                    "give one an explicit 'name'"
                )
            text = choice.get("criteria")
            if not isinstance(text, str) or not text.strip():
                raise ConfigurationError(
                    f"ModelSelectionProcessor {self.id!r} choice {name!r} has no criteria: the classifier "
                    "chooses on this text alone"
                )
            criteria[name] = text
            self.models[name] = choice["model"]
        if min_probability is not None and (
            isinstance(min_probability, bool)
            or not isinstance(min_probability, int | float)
            or not 0 <= min_probability <= 1
        ):
            raise ConfigurationError(
                f"ModelSelectionProcessor: min_probability must be between 0 and 1, got {min_probability!r}"
            )
        self.min_probability = None if min_probability is None else float(min_probability)
        listed = "\n".join(f"- {name}: {text}" for name, text in criteria.items())
        try:
            self.detector = DetectorModel(
                model,
                instructions=f"{instructions or DEFAULT_INSTRUCTIONS}\n\nThe choices:\n{listed}\n\n"
                "Answer the name of one choice, and a probability between 0 and 1 for each choice.",
                schema=ChoiceVerdict,
                judge_limits=JudgeLimits(
                    order=("choice", "probabilities"), enums={"choice": tuple(criteria)}
                ),
                schema_name="model_choice",
                provider_options=provider_options,
                json_prompt_injection=json_prompt_injection,
                label="ModelSelectionProcessor",
                max_output_tokens=max_output_tokens,
            )
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(str(exc)) from exc

    # ------------------------------------------------------------------ the hooks

    async def process_input(self, args: ProcessInputArgs) -> None:
        state = args.state.setdefault(_STATE_KEY, {"decided": False, "model": None})
        if state["decided"]:
            return
        state["decided"] = True  # once per request, before the first model call
        text = latest_user_text(args.messages)
        if not text:
            await self._report(ModelSelectionDecision(abstained="no-text"))
            return
        try:
            decision = await self.decide(text)
        except ConfigurationError:
            raise  # a misconfigured classifier (no key, unknown model) is an error, not a pass
        except Exception as exc:
            log.warning(
                "[ModelSelectionProcessor:%s] classification failed, the configured model serves: %s",
                self.id,
                exc,
            )
            decision = ModelSelectionDecision(abstained="error")
        state["model"] = decision.model
        await self._report(decision)

    def process_input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult | None:
        if self.scope == "first-step" and args.step_number != 0:
            return None
        state = args.state.get(_STATE_KEY)
        if not state or state.get("model") is None or fell_back(args, state):
            return None
        return ProcessInputStepResult(model=state["model"])

    # ------------------------------------------------------------------ deciding

    async def decide(self, text: str) -> ModelSelectionDecision:
        """The decision for `text` (the request's latest user text)."""
        if self.detector is None:
            return await self._selected(text)
        try:
            verdict = await self.detector.ask(f'Choose the model for this request:\n\nRequest: "{text}"')
        except DetectorError as exc:
            log.warning("[ModelSelectionProcessor:%s] the classifier failed: %s", self.id, exc)
            return ModelSelectionDecision(abstained="error")
        probability = (verdict.probabilities or {}).get(verdict.choice)
        if self.min_probability is not None and (probability is None or probability < self.min_probability):
            return ModelSelectionDecision(
                choice=verdict.choice, probability=probability, abstained="below-threshold"
            )
        model = self.models.get(verdict.choice)
        if model is None:
            return ModelSelectionDecision(
                choice=verdict.choice, probability=probability, abstained="no-model-for-choice"
            )
        return ModelSelectionDecision(model=model, choice=verdict.choice, probability=probability)

    async def _selected(self, text: str) -> ModelSelectionDecision:
        def refuse(reason: str | None = None, **_: Any) -> Any:
            raise _Unclassified(reason or "unclassified")

        try:
            result = await self.classifier.classify(text, refuse)
        except (_Unclassified, TripWire):
            return ModelSelectionDecision(abstained="error")
        if result is None:
            return ModelSelectionDecision(abstained="error")
        assert self.select is not None
        model = self.select(result, {"result": result})
        if inspect.isawaitable(model):
            model = await model
        return ModelSelectionDecision(model=model)

    async def _report(self, decision: ModelSelectionDecision) -> None:
        if self.on_decision is None:
            return
        try:
            outcome = self.on_decision(decision)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception as exc:
            log.warning("[ModelSelectionProcessor:%s] on_decision raised, ignored: %s", self.id, exc)


class _Unclassified(Exception):
    """The classifier could not classify the request (its `abort` was called)."""


def _label(model: Any) -> str:
    if isinstance(model, str):
        return model
    return str(getattr(model, "model_id", None) or "model")
