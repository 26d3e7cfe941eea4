"""`ModelRouterProcessor`: picks the model for a run from its request — by a deterministic rule,
a small classifier model, or both — once, before the first step, and keeps it for the run.

Routing is a swap, not a check: a wrong choice has no in-band recovery, so the router only
switches when it is sure and otherwise leaves the agent's configured model (which should be
the capable one) in place."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pydantic

from sluicegate.errors import ConfigurationError, UnknownModelError
from sluicegate.guardrails.detector import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DetectorError,
    DetectorModel,
    Verdict,
    refuse_detector_options,
)
from sluicegate.guardrails.judge_schema import JudgeLimits
from sluicegate.guardrails.message_checks import message_text
from sluicegate.guardrails.violations import report
from sluicegate.messages import Message
from sluicegate.models.base import LanguageModel
from sluicegate.models.registry import known_providers
from sluicegate.processors.args import ProcessInputStepArgs, ProcessInputStepResult
from sluicegate.processors.base import Processor
from sluicegate.processors.option_check import checked_id

log = logging.getLogger(__name__)

ROUTE_KEY = "sluicegate__modelRoute"
"""The `request_context` key under which the router records the `ModelRoute` it took."""

RouteRule = Callable[[str], "Awaitable[str | None] | str | None"]
"""`rule(text)`: the route for the request's latest user text, or None to abstain (an async
function may be the rule, for a lookup)."""

_STATE_KEY = "model_router"


class RouteVerdict(Verdict):
    route: str = pydantic.Field(description="The route that fits the request best, from the list of routes")
    confidence: float | None = pydantic.Field(
        default=None, ge=0, le=1, description="Confidence between 0 and 1 that this route fits"
    )


@dataclass(frozen=True, slots=True)
class ModelRoute:
    """The route a run took: its name, the confidence it was chosen with (1.0 for a rule) and
    what chose it."""

    route: str
    confidence: float
    source: Literal["rule", "classifier"]


def default_instructions(routes: Mapping[str, str | None]) -> str:
    listed = "\n".join(f"- {name}: {text}" if text else f"- {name}" for name, text in routes.items())
    return (
        "You route requests to the model best suited to answer them. Read the request and choose "
        f"exactly one of these routes:\n{listed}\n\n"
        "Give the route's name and your confidence between 0 and 1. When unsure, give a low confidence."
    )


class ModelRouterProcessor(Processor):
    """Chooses the run's model from `routes` by classifying the request's latest user message.

    `routes` maps route names to models (`"provider/model"` strings or `LanguageModel`s). The
    route comes from `rule(text)` (deterministic, offline; None abstains) and, when the rule
    abstains or there is none, from `classifier`, a small model answering a route name and a
    confidence (described to it by `descriptions`, or replaced `instructions`). The request is
    classified once, at step 0, and the chosen model serves every step of the run: a run never
    changes model midway through a tool loop. The choice is recorded as a `ModelRoute` in
    `request_context` under `ROUTE_KEY`.

    The router abstains — the agent's configured model serves the run — when the rule and the
    classifier both abstain, when the classifier's confidence is below `min_confidence`
    (default 0.6; an answer without a confidence counts as below it unless `min_confidence` is
    0), or when the rule or the classifier fails (logged at WARNING and reported to
    `on_violation`). A misconfigured classifier (unknown provider, missing key, HTTP 401/403/
    404) is not a failure to route around but an error. The routed model takes the configured
    model's place in the agent's fallback list: when it fails, the fallback models after the
    configured one serve, and the router stops routing for the rest of the run (in a durable
    run a routed model serves alone). Use one router per agent.

    Example::

        router = ModelRouterProcessor(
            routes={"simple": "openai/gpt-5-nano", "complex": "openai/gpt-5"},
            rule=lambda text: "simple" if len(text) < 80 else None,
            classifier="local/smollm2-135m",
            descriptions={"simple": "small talk and short factual questions",
                          "complex": "reasoning, code, multi-step tasks"},
        )
        agent = Agent(name="support", model="openai/gpt-5", input_processors=[router])
    """

    id = "model-router"
    name = "Model Router"

    def __init__(
        self,
        *,
        routes: Mapping[str, str | LanguageModel],
        rule: RouteRule | None = None,
        classifier: str | LanguageModel | None = None,
        descriptions: Mapping[str, str] | None = None,
        min_confidence: float = 0.6,
        instructions: str | None = None,
        provider_options: dict[str, Any] | None = None,
        json_prompt_injection: bool = False,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
        id: str | None = None,
    ) -> None:
        super().__init__()
        if id is not None:
            self.id = checked_id("ModelRouterProcessor", id)
        self.routes: dict[str, str | LanguageModel] = _check_routes(routes)
        if rule is None and classifier is None:
            raise ConfigurationError("ModelRouterProcessor needs a `rule`, a `classifier`, or both")
        if rule is not None and not callable(rule):
            raise ConfigurationError(f"ModelRouterProcessor: rule must be callable, got {rule!r}")
        self.rule = rule
        unknown_described = sorted(set(descriptions or {}) - set(self.routes))
        if unknown_described:
            raise ConfigurationError(
                f"ModelRouterProcessor: descriptions name unknown route(s): {', '.join(unknown_described)}"
            )
        if (
            isinstance(min_confidence, bool)
            or not isinstance(min_confidence, int | float)
            or not 0 <= min_confidence <= 1
        ):
            raise ConfigurationError(
                f"ModelRouterProcessor: min_confidence must be between 0 and 1, got {min_confidence!r}"
            )
        self.min_confidence = float(min_confidence)
        self.detector: DetectorModel[RouteVerdict] | None = None
        if classifier is not None:
            described = {name: (descriptions or {}).get(name) for name in self.routes}
            try:
                self.detector = DetectorModel(
                    classifier,
                    instructions=instructions or default_instructions(described),
                    schema=RouteVerdict,
                    judge_limits=JudgeLimits(
                        order=("route", "confidence"), enums={"route": tuple(self.routes)}
                    ),
                    schema_name="model_route",
                    provider_options=provider_options,
                    json_prompt_injection=json_prompt_injection,
                    label="ModelRouterProcessor",
                    max_output_tokens=max_output_tokens,
                )
            except (ValueError, TypeError) as exc:
                raise ConfigurationError(str(exc)) from exc
        else:
            refuse_detector_options(
                "ModelRouterProcessor",
                descriptions=descriptions,
                instructions=instructions,
                provider_options=provider_options,
                json_prompt_injection=json_prompt_injection,
                max_output_tokens=max_output_tokens,
            )

    async def process_input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult | None:
        state = args.state.setdefault(_STATE_KEY, {"decided": False, "route": None})
        if not state["decided"]:
            # Decided once, at the run's first step (a retried step 0 keeps the first decision).
            state["decided"] = True
            state["route"] = await self.decide(latest_user_text(args.messages))
            if state["route"] is not None:
                args.request_context.set(ROUTE_KEY, state["route"])
        route: ModelRoute | None = state["route"]
        if route is None or fell_back(args, state):
            return None
        return ProcessInputStepResult(model=self.routes[route.route])

    async def decide(self, text: str) -> ModelRoute | None:
        """The route for `text`, or None to keep the configured model."""
        if not text:
            return None
        if self.rule is not None:
            try:
                chosen = self.rule(text)
                if inspect.isawaitable(chosen):
                    chosen = await chosen
            except Exception as exc:
                self._abstain(f"the rule failed ({type(exc).__name__}: {exc})", {"error": str(exc)})
                return None
            if chosen is not None:
                if chosen not in self.routes:
                    raise ConfigurationError(
                        f"ModelRouterProcessor: the rule returned {chosen!r}, which is not a route "
                        f"(routes: {', '.join(self.routes)})"
                    )
                log.info("[ModelRouterProcessor] rule routed the request to %r", chosen)
                return ModelRoute(chosen, 1.0, "rule")
        if self.detector is None:
            return None
        try:
            verdict = await self.detector.ask(f'Choose the route for this request:\n\nRequest: "{text}"')
        except DetectorError as exc:
            self._abstain(f"the classifier failed ({exc})", {"error": str(exc)})
            return None
        if verdict.route not in self.routes:
            self._abstain(
                f"the classifier answered an unknown route {verdict.route!r}", {"route": verdict.route}
            )
            return None
        confidence = verdict.confidence
        if self.min_confidence > 0 and (confidence is None or confidence < self.min_confidence):
            self._abstain(
                f"the classifier chose {verdict.route!r} with confidence {confidence!r}, "
                f"below min_confidence {self.min_confidence}",
                {"route": verdict.route, "confidence": confidence, "low_confidence": True},
            )
            return None
        log.info("[ModelRouterProcessor] classifier routed the request to %r (%s)", verdict.route, confidence)
        return ModelRoute(verdict.route, 1.0 if confidence is None else confidence, "classifier")

    def _abstain(self, why: str, detail: dict[str, Any]) -> None:
        message = f"ModelRouterProcessor: {why}; the configured model serves the run"
        log.warning("[ModelRouterProcessor] %s; the configured model serves the run", why)
        report(self, message, {**detail, "routed": False})


def fell_back(args: ProcessInputStepArgs, state: dict[str, Any]) -> bool:
    """Whether the run moved off the agent's configured model to a fallback (the chosen model,
    which takes the configured one's place, failed): from then on a router leaves the model to
    the fallbacks, or it would ask the failing model first on every step."""
    if state.get("fell_back"):
        return True
    primary = state.setdefault("primary", args.model)
    if args.model is not primary:
        state["fell_back"] = True
        return True
    return False


def latest_user_text(messages: list[Message]) -> str:
    """The text of the last user message (empty when there is none)."""
    for message in reversed(messages):
        if message.role == "user":
            return message_text(message)
    return ""


def _check_routes(routes: Any) -> dict[str, str | LanguageModel]:
    if not isinstance(routes, Mapping) or not routes:
        raise ConfigurationError(
            f"ModelRouterProcessor: routes must be a non-empty mapping of route name to model, got {routes!r}"
        )
    checked: dict[str, str | LanguageModel] = {}
    for name, model in routes.items():
        if not isinstance(name, str) or not name:
            raise ConfigurationError(
                f"ModelRouterProcessor: route names must be non-empty strings, got {name!r}"
            )
        if isinstance(model, str):
            provider, sep, model_id = model.partition("/")
            if not sep or not model_id:
                raise UnknownModelError(
                    f"ModelRouterProcessor: route {name!r}: model string {model!r} "
                    "must look like 'provider/model-id'"
                )
            if provider not in known_providers():
                raise UnknownModelError(
                    f"ModelRouterProcessor: route {name!r}: unknown model provider {provider!r} in {model!r}"
                )
        elif not hasattr(model, "do_stream"):
            raise ConfigurationError(
                f"ModelRouterProcessor: route {name!r} must map to a 'provider/model' string or a "
                f"LanguageModel, got {model!r}"
            )
        checked[name] = model
    return checked
