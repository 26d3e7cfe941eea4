"""What the LLM guardrails share: asking a detector model for a JSON verdict, reading message
text, rewriting it, choosing which messages to check, and reporting violations.

The guardrails (`ModerationProcessor`, `PIIDetector`, `PromptInjectionDetector`,
`LanguageDetector`, `SystemPromptScrubber`) each ask a small model for a verdict in a JSON
schema. When that call fails or its answer cannot be read, `error_strategy` decides (unlike
Mastra, which always lets the content through): `"block"` aborts the run (the default for the
blocking and redacting strategies), `"allow"` lets the content through, logged at WARNING and
reported to `on_violation`, and `"fallback"` lets the guardrail's deterministic pass decide. A
misconfigured detector (unknown provider, missing API key) is never a pass: an unknown provider
is an error when the guardrail is built, a missing key when it is first called.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

import pydantic

from sluicegate.errors import APICallError, ConfigurationError, TripWire, UnknownModelError
from sluicegate.messages import Message
from sluicegate.messages.part import Part
from sluicegate.models.base import CallOptions, LanguageModel
from sluicegate.models.registry import known_providers, resolve_model
from sluicegate.processors.base import Processor, notify_violation
from sluicegate.processors.builtin._judge_schema import JudgeLimits, fit_to_budget, judge_schema, score_grid
from sluicegate.tracing.metrics import record_detector_call

log = logging.getLogger("sluicegate.processors.guardrails")

VerdictT = TypeVar("VerdictT", bound=pydantic.BaseModel)

ErrorStrategy = Literal["block", "allow", "fallback"]
LLMMode = Literal["always", "when-unsure", "never"]
"""When a guardrail with a deterministic pass asks its model: `"always"` (the model decides),
`"when-unsure"` (only when the deterministic pass found nothing) or `"never"` (offline)."""
ERROR_STRATEGIES: tuple[str, ...] = ("block", "allow", "fallback")
DEFAULT_MAX_OUTPUT_TOKENS = 512
"""Verdicts are short: a cap keeps a confused detector from rambling on the caller's bill."""


_MISCONFIGURED = (401, 403, 404)
"""Provider answers that mean the detector is misconfigured (key, permissions, model name)."""


class DetectorError(Exception):
    """The detector model's call failed or its answer was not a valid verdict."""


def resolve_llm(label: str, model: Any, llm: str | None) -> LLMMode:
    """`llm`, checked: `"never"` by default without a `model`, `"always"` with one."""
    if llm is None:
        return "never" if model is None else "always"
    check_choice("llm", llm, ("always", "when-unsure", "never"))
    if llm != "never" and model is None:
        raise ValueError(
            f"{label} with llm={llm!r} needs a `model`; use llm='never' for the offline pass only"
        )
    return llm  # type: ignore[return-value]


def system_prompt_text(args: Any) -> str:
    """The request's system messages as one text (empty when there is no message list)."""
    message_list = getattr(args, "message_list", None)
    if message_list is None:
        return ""
    return "\n".join(str(m.get("content", "")) for m in message_list.get_system_messages())


def default_error_strategy(strategy: str, error_strategy: str | None) -> ErrorStrategy:
    """`error_strategy`, checked; by default `"block"` for guardrails that block or redact
    (fail closed) and `"allow"` for those that only warn or filter."""
    if error_strategy is None:
        return "block" if strategy in ("block", "redact", "rewrite") else "allow"
    check_choice("error_strategy", error_strategy, ERROR_STRATEGIES)
    return error_strategy  # type: ignore[return-value]


def check_parallel(strategy: str, run_in_parallel: bool) -> bool:
    """`run_in_parallel`, checked: only a guardrail that blocks or warns (a check only) may run
    concurrently with the first model call."""
    if run_in_parallel and strategy not in ("block", "warn"):
        raise ValueError(f"run_in_parallel needs strategy 'block' or 'warn' (a check only), got {strategy!r}")
    return run_in_parallel


class ChecksInputOnly:
    """Mix-in for guardrails whose block and warn strategies only check the input."""

    strategy: str

    @property
    def checks_input_only(self) -> bool:
        """Blocking or warning never changes the input, so this guard may run concurrently with
        other checks (see `input_guards`)."""
        return self.strategy in ("block", "warn")


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
    bounded (see `_judge_schema`): `json_schema` for every judge, and for the embedded model a
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
        whose llama.cpp grammar binds every token to the schema (see `_judge_schema`)."""
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


def message_text(message: Message) -> str:
    """A message's text parts joined by spaces (the legacy string when there are none), trimmed."""
    texts = [
        p["text"] for p in message.content.parts if p.get("type") == "text" and isinstance(p.get("text"), str)
    ]
    text = " ".join(texts).strip()
    if not text and isinstance(message.content.content, str):
        text = message.content.content.strip()
    return text


def with_text(message: Message, text: str) -> Message:
    """A copy of `message` (same id, so it replaces the original) whose text is `text`.

    The text parts become one part with `text`, in the place of the first; other parts (files,
    tool invocations) are kept, unlike Mastra, which drops them.
    """
    parts: list[Part] = []
    placed = False
    for part in message.content.parts:
        if part.get("type") == "text":
            if not placed:
                parts.append(Part(type="text", text=text))
                placed = True
            continue
        parts.append(part)
    if not placed:
        parts.insert(0, Part(type="text", text=text))
    copy = Message(
        role=message.role,
        content=type(message.content)(
            parts=parts,
            content=text,
            metadata=dict(message.content.metadata) if message.content.metadata else message.content.metadata,
            format=message.content.format,
            extra=dict(message.content.extra),
        ),
        id=message.id,
        created_at=message.created_at,
        thread_id=message.thread_id,
        resource_id=message.resource_id,
        type=message.type,
    )
    return copy


def with_metadata(message: Message, key: str, value: Any) -> Message:
    """`message` with `content.metadata[key] = value` (set in place; the message is returned)."""
    metadata = dict(message.content.metadata or {})
    metadata[key] = value
    message.content.metadata = metadata
    return message


def input_ids(args: Any) -> set[str] | None:
    """Ids of the messages an input guardrail checks: this request's input (not remembered
    history, which was checked when it arrived); None means every message."""
    message_list = getattr(args, "message_list", None)
    if message_list is None:
        return None
    return {m.id for m in message_list.get.input.db()}


def response_ids(args: Any) -> set[str] | None:
    """Ids of the messages an output guardrail checks at the end: this run's response."""
    message_list = getattr(args, "message_list", None)
    if message_list is None:
        return None
    return {m.id for m in message_list.get.response.db()}


def to_check(
    messages: Iterable[Message], ids: set[str] | None, roles: Iterable[str] | None = None
) -> list[Message]:
    wanted_roles = set(roles) if roles is not None else None
    return [
        m
        for m in messages
        if m.role != "system"
        and (ids is None or m.id in ids)
        and (wanted_roles is None or m.role in wanted_roles)
    ]


def report(processor: Processor, message: str, detail: Any) -> None:
    """Tell `processor.on_violation` about a warn-strategy detection; its errors are swallowed."""
    notify_violation(processor, message, detail)


def check_choice(option: str, value: Any, choices: Sequence[str]) -> None:
    """Raise ValueError unless `value` is one of `choices` (a guardrail option's allowed values)."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}"
        raise ValueError(f"{option} must be {listed}, got {value!r}")


def check_threshold(threshold: float) -> None:
    if not 0 <= threshold <= 1:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold!r}")


def enforce(
    processor: Processor,
    strategy: str,
    message: str,
    detail: dict[str, Any],
    abort: Any,
    *,
    label: str,
    log: logging.Logger,
) -> None:
    """Act on a detection: `"block"` aborts with `detail` as tripwire metadata, `"warn"` logs and
    reports to `on_violation`; any other strategy (the caller then drops or rewrites the
    content) is logged at info level."""
    if strategy == "block":
        abort(message, metadata=detail)
    elif strategy == "warn":
        log.warning("[%s] %s", label, message)
        report(processor, message, detail)
    else:
        log.info("[%s] %s (%s)", label, message, strategy)


async def flagged_text(
    text: str,
    detect: Callable[[str], Awaitable[VerdictT | None]],
    is_flagged: Callable[[VerdictT], bool],
) -> VerdictT | None:
    """The detector's verdict on `text` when it flags it; None for blank text (not asked), a
    verdict that flags nothing, or a failed detector that was allowed through."""
    if not text.strip():
        return None
    verdict = await detect(text)
    return verdict if verdict is not None and is_flagged(verdict) else None


async def flagged_messages(
    messages: Iterable[Message],
    detect: Callable[[str], Awaitable[VerdictT | None]],
    is_flagged: Callable[[VerdictT], bool],
) -> AsyncIterator[tuple[Message, str, VerdictT]]:
    """Each message with text that the detector flags, with its text and the verdict."""
    for message in messages:
        text = message_text(message)
        if not text:
            continue
        verdict = await detect(text)
        if verdict is not None and is_flagged(verdict):
            yield message, text, verdict


def replace_messages(messages: list[Message], replaced: Mapping[str, Message | None]) -> list[Message] | None:
    """`messages` with the ones named in `replaced` swapped (None drops them); None when
    nothing changed, so the runner leaves the list alone."""
    if not replaced:
        return None
    out: list[Message] = []
    for message in messages:
        if message.id not in replaced:
            out.append(message)
        elif (substitute := replaced[message.id]) is not None:
            out.append(substitute)
    return out


class Finding(Protocol):
    """A located detection in a verdict: what it is, its text, where the model says it is."""

    @property
    def type(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


@dataclass(slots=True)
class Span:
    start: int
    end: int
    type: str


def locate(content: str, findings: Iterable[Finding]) -> list[Span]:
    """Where the findings sit in `content`, overlapping spans merged (the longest finding names
    the merged span). Every occurrence of a finding's value counts (models often miscount
    characters, and a value repeated in the text is just as sensitive), plus the model's own
    offsets when they point at the value."""
    found: list[Span] = []
    for finding in findings:
        value = finding.value
        if 0 <= finding.start < finding.end <= len(content) and (
            not value or content[finding.start : finding.end] == value
        ):
            found.append(Span(finding.start, finding.end, finding.type))
        if value:
            found.extend(
                Span(m.start(), m.end(), finding.type) for m in re.finditer(re.escape(value), content)
            )
    found.sort(key=lambda s: (s.start, s.start - s.end))
    merged: list[Span] = []
    longest = 0
    for span in found:
        if merged and span.start < merged[-1].end:
            current = merged[-1]
            if span.end - span.start > longest:
                current.type, longest = span.type, span.end - span.start
            current.end = max(current.end, span.end)
        else:
            merged.append(Span(span.start, span.end, span.type))
            longest = span.end - span.start
    return merged


def substitute(content: str, spans: Sequence[Span], replacement: Any) -> str:
    """`content` with each span replaced by `replacement(span_text, span_type)`."""
    out: list[str] = []
    cursor = 0
    for span in spans:
        out.append(content[cursor : span.start])
        out.append(replacement(content[span.start : span.end], span.type))
        cursor = span.end
    out.append(content[cursor:])
    return "".join(out)


def string_leaves(value: Any) -> list[str]:
    """Every non-blank string inside `value` (through dicts, lists and tuples), in order."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in string_leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in string_leaves(item)]
    return []


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """`value` with every string inside it replaced by `fn(string)` (containers copied)."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {key: map_strings(item, fn) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(map_strings(item, fn) for item in value)
    return value


WITHHELD_TOOL_RESULT = "[tool result withheld by {label}]"
