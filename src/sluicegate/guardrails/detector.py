"""Asking a detector model for a JSON verdict, as the LLM guardrails do.

The guardrails (`ModerationProcessor`, `PIIDetector`, `PromptInjectionDetector`,
`LanguageDetector`, `SystemPromptScrubber`) each ask a small model for a verdict in a JSON
schema. When that call fails or its answer cannot be read, `error_strategy` decides (unlike
Mastra, which always lets the content through): `"block"` aborts the run (the default for the
blocking and redacting strategies), `"allow"` lets the content through, logged at WARNING and
reported to `on_violation`, and `"fallback"` lets the guardrail's deterministic pass decide. A
misconfigured detector (unknown provider, missing API key) is never a pass: an unknown provider
is an error when the guardrail is built, a missing key when a run starts
(`agent.preflight`), before the agent's model is called.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import pydantic

from sluicegate.errors import APICallError, ConfigurationError, TripWire, UnknownModelError
from sluicegate.guardrails.judge_schema import JudgeLimits, fit_to_budget, judge_schema, score_grid
from sluicegate.guardrails.violations import report
from sluicegate.models.base import CallOptions, LanguageModel
from sluicegate.models.registry import known_providers, resolve_model
from sluicegate.processors.base import Processor
from sluicegate.tracing.metrics import record_detector_call

log = logging.getLogger("sluicegate.processors.guardrails")

VerdictT = TypeVar("VerdictT", bound=pydantic.BaseModel)

DEFAULT_MAX_OUTPUT_TOKENS = 512
"""Verdicts are short: a cap keeps a confused detector from rambling on the caller's bill."""


_MISCONFIGURED = (401, 403, 404)
"""Provider answers that mean the detector is misconfigured (key, permissions, model name)."""


class DetectorError(Exception):
    """The detector model's call failed or its answer was not a valid verdict."""


class Verdict(pydantic.BaseModel):
    """Base of the detectors' answer schemas: unknown keys are ignored, not an error."""

    model_config = pydantic.ConfigDict(extra="ignore")


class DetectorModel(Generic[VerdictT]):
    """A detector model asked for one verdict per text, with structured output.

    `model` is a `"provider/model"` string or a `LanguageModel`; strings resolve on first use so
    building a guardrail never needs provider credentials. The call carries the system
    `instructions`, the prompt as a user message, `temperature=0` and a JSON `response_format`
    built from `schema` (see `restrict_enum`). Models without a native JSON mode can be told the
    schema in the system message instead (`json_prompt_injection`, Mastra's
    `structuredOutputOptions.jsonPromptInjection`). With `judge_limits` the schema sent is
    bounded (see `guardrails.judge_schema`): `json_schema` for every judge, and for the embedded model a
    `constrained_schema` sized so a complete verdict fits `max_output_tokens` (a cap too small
    for one is a ValueError when the judge is the embedded model, checked at construction).
    """

    def __init__(
        self,
        model: str | LanguageModel | Any,
        *,
        instructions: str,
        schema: type[VerdictT],
        json_schema: dict[str, Any] | None = None,
        schema_name: str,
        provider_options: dict[str, Any] | None = None,
        json_prompt_injection: bool = False,
        label: str,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
        judge_limits: JudgeLimits | None = None,
    ) -> None:
        if max_output_tokens is not None and max_output_tokens < 1:
            raise ValueError(f"{label}: max_output_tokens must be positive, got {max_output_tokens!r}")
        if model is None or (isinstance(model, str) and not model):
            raise ValueError(f"{label} needs a `model`: a 'provider/model' string or a LanguageModel")
        if not isinstance(model, str) and not hasattr(model, "do_generate"):
            raise TypeError(
                f"{label}: `model` must be a 'provider/model' string or a LanguageModel, got {model!r}"
            )
        if isinstance(model, str):
            provider, sep, model_id = model.partition("/")
            if not sep or not model_id:
                raise UnknownModelError(f"{label}: model string {model!r} must look like 'provider/model-id'")
            if provider not in known_providers():
                raise UnknownModelError(
                    f"{label}: unknown model provider {provider!r} in {model!r}; "
                    f"known providers: {', '.join(known_providers()) or 'none registered'}"
                )
        self._model_config = model
        self._model: LanguageModel | None = None if isinstance(model, str) else model
        self.max_output_tokens = max_output_tokens
        self.instructions = instructions
        self.schema = schema
        base_schema = json_schema if json_schema is not None else schema.model_json_schema()
        self.json_schema = base_schema if judge_limits is None else judge_schema(base_schema, judge_limits)
        self._judge_limits = judge_limits
        self._constrained_schema: dict[str, Any] | None = None
        self.schema_name = schema_name
        self.provider_options = provider_options
        self.json_prompt_injection = json_prompt_injection
        self.label = label
        self.processor_id: str | None = None  # set by tracing: the guardrail this detector serves
        if _is_embedded(model):
            # Sized now, so a cap too small for a complete verdict is an error at construction.
            self._constrained_schema = self._fit_to_budget()

    @property
    def model(self) -> LanguageModel:
        if self._model is None:
            self._model = resolve_model(self._model_config)
        return self._model

    @property
    def model_config(self) -> str | LanguageModel | Any:
        """The model as given (a `"provider/model"` string is not resolved by reading this)."""
        return self._model_config

    def use_model(self, model: LanguageModel) -> None:
        """Ask `model` from now on, in place (`sluicegate eval` wraps it to count calls)."""
        self._model = model

    def asking(self, model: LanguageModel) -> DetectorModel[VerdictT]:
        """This detector (same instructions, schema and options) asking `model` instead: how a
        durable run sends its judges' calls through an activity. The wire schema follows
        `model.provider`, so a stand-in for the embedded model must say `"local"`."""
        other = copy.copy(self)
        other.use_model(model)
        return other

    @property
    def constrained_schema(self) -> dict[str, Any]:
        """The schema for a grammar-constrained judge (the embedded model): scores on a grid
        and findings sized so that a complete verdict fits `max_output_tokens`."""
        if self._constrained_schema is None:
            self._constrained_schema = self._fit_to_budget()
        return self._constrained_schema

    def _fit_to_budget(self) -> dict[str, Any]:
        if self._judge_limits is None:
            return score_grid(self.json_schema)
        return fit_to_budget(self.json_schema, self._judge_limits, self.max_output_tokens, label=self.label)

    def wire_schema(self) -> dict[str, Any]:
        """The schema as sent: `json_schema`, or `constrained_schema` for the embedded model,
        whose llama.cpp grammar binds every token to the schema (see `guardrails.judge_schema`)."""
        if _is_embedded(self._model):
            try:
                return self.constrained_schema
            except ValueError as exc:
                raise ConfigurationError(str(exc)) from exc
        return self.json_schema

    def call_options(self, prompt: str) -> CallOptions:
        system = self.instructions
        schema = self.wire_schema()
        if self.json_prompt_injection:
            system += (
                "\n\nRespond with only a JSON object (no prose, no code fence) matching this JSON schema:\n"
                + json.dumps(schema)
            )
        return CallOptions(
            prompt=[
                {"role": "system", "content": system},
                {"role": "user", "content": [{"type": "text", "text": prompt}]},
            ],
            temperature=0,
            max_output_tokens=self.max_output_tokens,
            response_format={"type": "json", "schema": schema, "name": self.schema_name},
            provider_options=self.provider_options,
        )

    async def ask(self, prompt: str) -> VerdictT:
        """The model's verdict on `prompt`. Raises `DetectorError` when the call or its answer
        fails, and lets `ConfigurationError` (no API key, unknown model) through as it is."""
        record_detector_call(self.processor_id or self.label)
        try:
            model = self.model
            result = await model.do_generate(self.call_options(prompt))
            text = "".join(part.get("text", "") for part in result.content if part.get("type") == "text")
            return self.schema.model_validate(parse_json_object(text))
        except (ConfigurationError, TripWire):
            raise
        except APICallError as exc:
            # Its summary only: the provider's text can echo the judged content into a tripwire.
            exc.provider = exc.provider or getattr(self.model, "provider", None)
            if exc.status_code in _MISCONFIGURED:
                # A wrong key, a model that does not exist: no retry or fallback can fix that.
                raise ConfigurationError(
                    f"{self.label}: the detector model rejected the call (HTTP {exc.status_code}): "
                    f"{exc.public_message}"
                ) from exc
            raise DetectorError(f"{type(exc).__name__}: {exc.public_message}") from exc
        except Exception as exc:
            raise DetectorError(f"{type(exc).__name__}: {exc}") from exc


def _is_embedded(model: Any) -> bool:
    """Whether `model` (a model string or instance) is the embedded llama.cpp model."""
    if isinstance(model, str):
        return model.startswith("local/")
    return model is not None and getattr(model, "provider", None) == "local"


async def judged(
    processor: Processor,
    detector: DetectorModel[VerdictT],
    prompt: str,
    *,
    error_strategy: str,
    fallback: Callable[[], VerdictT | None] | None = None,
) -> VerdictT | None:
    """`detector`'s verdict on `prompt`; when it fails, what `error_strategy` says: raise a
    `TripWire` (`"block"`), the deterministic `fallback`'s verdict (`"fallback"`), or None
    (`"allow"`, and `"fallback"` without one) — logged at WARNING and reported to
    `on_violation`, since the content then passes unjudged."""
    try:
        return await detector.ask(prompt)
    except DetectorError as exc:
        label = detector.label
        detail = {"error": str(exc), "error_strategy": error_strategy}
        if error_strategy == "block":
            raise TripWire(
                f"{label}: the detector model failed, so the content is blocked ({exc})",
                metadata={**detail, "detector_failed": True},
            ) from exc
        if error_strategy == "fallback" and fallback is not None:
            log.warning("[%s] detector model failed; the deterministic pass decides: %s", label, exc)
            return fallback()
        message = f"{label}: the detector model failed; content allowed unjudged ({exc})"
        log.warning("[%s] detector model failed, allowing content: %s", label, exc)
        report(processor, message, {**detail, "fail_open": True})
        return None


def judges_of(processor: Any) -> dict[str, DetectorModel[Any]]:
    """The detector models `processor` asks, by attribute name (a guardrail's own attributes)."""
    return {
        name: value
        for name, value in getattr(processor, "__dict__", {}).items()
        if isinstance(value, DetectorModel)
    }


def with_judge_models(processor: Any, model_for: Callable[[str, DetectorModel[Any]], LanguageModel]) -> Any:
    """A shallow copy of `processor` whose detectors ask `model_for(attribute, detector)`; the
    processor itself is unchanged (it keeps serving other runs)."""
    found = judges_of(processor)
    if not found:
        return processor
    other = copy.copy(processor)
    for name, detector in found.items():
        setattr(other, name, detector.asking(model_for(name, detector)))
    return other


def parse_json_object(text: str) -> Any:
    """The JSON object in a model's answer, tolerating code fences and prose around it."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").strip()
        if stripped[:4].lower() == "json":
            stripped = stripped[4:]
    try:
        return json.loads(stripped)
    except ValueError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start == -1 or end <= start:
            raise ValueError(f"no JSON object in the detector's answer: {text[:200]!r}") from None
        return json.loads(stripped[start : end + 1])


def restrict_enum(
    schema: dict[str, Any], definition: str, field: str, values: Sequence[str]
) -> dict[str, Any]:
    """`schema` with `$defs[definition].properties[field]` limited to `values` (the categories the
    detector may name), as Mastra's `z.enum(categories)` does."""
    prop = schema.get("$defs", {}).get(definition, {}).get("properties", {}).get(field)
    if prop is not None and values:
        prop["enum"] = list(values)
    return schema


def refuse_detector_options(label: str, *, max_output_tokens: int | None, **given: Any) -> None:
    """Options that only configure a detector model, given to a processor that has none: refused
    with a `ConfigurationError` naming them, rather than ignored."""
    if max_output_tokens != DEFAULT_MAX_OUTPUT_TOKENS:
        given["max_output_tokens"] = max_output_tokens
    named = [name for name, value in given.items() if value is not None and value is not False]
    if named:
        raise ConfigurationError(f"{label}: {', '.join(named)} configure the `classifier`, and there is none")
