"""`LanguageDetector`: an LLM identifies the language of user input; the processor records it
in the message metadata and, for input outside the target languages, translates it, warns or
blocks — so the agent's model always works in the language you chose."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, get_args

import pydantic

from sluicegate.guardrails.detector import DEFAULT_MAX_OUTPUT_TOKENS, DetectorModel, Verdict, judged
from sluicegate.guardrails.deterministic import detect_language
from sluicegate.guardrails.guard_options import (
    ErrorStrategy,
    LLMMode,
    check_choice,
    check_threshold,
    default_error_strategy,
    describe_detection,
    resolve_llm,
)
from sluicegate.guardrails.judge_schema import JudgeLimits
from sluicegate.guardrails.message_checks import input_ids, message_text, to_check, with_metadata, with_text
from sluicegate.guardrails.violations import report
from sluicegate.messages import Message
from sluicegate.models.base import LanguageModel
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.processors.base import Processor

log = logging.getLogger(__name__)

LanguageStrategy = Literal["detect", "translate", "block", "warn"]
TranslationQuality = Literal["speed", "quality", "balanced"]

METADATA_KEY = "language_detection"
DEFAULT_TARGET_LANGUAGES: tuple[str, ...] = ("English", "en")
ASSUMED_CONFIDENCE = 0.95
"""Confidence recorded when the detector answers nothing (its instructions say: nothing for
text already in the target language) or translates without a confidence, as in Mastra."""

LANGUAGE_NAMES: dict[str, str] = {
    "en": "English", "es": "Spanish", "fr": "French", "de": "German", "it": "Italian",
    "pt": "Portuguese", "ru": "Russian", "ja": "Japanese", "ko": "Korean", "zh": "Chinese",
    "zh-cn": "Chinese (Simplified)", "zh-tw": "Chinese (Traditional)", "ar": "Arabic", "hi": "Hindi",
    "th": "Thai", "vi": "Vietnamese", "tr": "Turkish", "pl": "Polish", "nl": "Dutch", "sv": "Swedish",
    "da": "Danish", "no": "Norwegian", "fi": "Finnish", "el": "Greek", "he": "Hebrew", "cs": "Czech",
    "hu": "Hungarian", "ro": "Romanian", "bg": "Bulgarian", "hr": "Croatian", "sk": "Slovak",
    "sl": "Slovenian", "et": "Estonian", "lv": "Latvian", "lt": "Lithuanian", "uk": "Ukrainian",
    "be": "Belarusian",
}  # fmt: skip

QUALITY_HINTS: dict[str, str] = {
    "speed": "Translate quickly; a plain, literal translation is fine.",
    "quality": "Translate carefully, keeping meaning, tone and nuance.",
    "balanced": "Translate accurately without over-polishing.",
}


class LanguageVerdict(Verdict):
    iso_code: str | None = pydantic.Field(default=None, description="ISO 639-1 language code")
    confidence: float | None = pydantic.Field(default=None, ge=0, le=1, description="Detection confidence")
    translated_text: str | None = pydantic.Field(default=None, description="Translated text")


def language_name(iso_code: str) -> str:
    return LANGUAGE_NAMES.get(iso_code.lower(), iso_code)


def language_code(language: str) -> str:
    """The ISO code for a language name or code (`"English"` / `"en"` -> `"en"`)."""
    lowered = language.lower()
    if lowered in LANGUAGE_NAMES:
        return lowered
    for code, name in LANGUAGE_NAMES.items():
        if name.lower() == lowered:
            return code
    return lowered if len(lowered) <= 3 else "unknown"


DEFAULT_INSTRUCTIONS = (
    "You are a language detection specialist. Identify the language of text content and translate it "
    "when asked.\n\n"
    "IMPORTANT: IF THE CONTENT IS ALREADY IN A TARGET LANGUAGE, RETURN AN EMPTY OBJECT. Do not include "
    "zeros or false values."
)


class LanguageDetector(Processor):
    """Language detection (and translation) by an LLM, for input.

    New input messages of at least `min_text_length` characters (default 10) go to `model`.
    A detection below `threshold` (default 0.7) confidence leaves the message untouched;
    otherwise its language is recorded in `content.metadata["language_detection"]`. For text
    outside `target_languages` (names or ISO codes; default English), `strategy` decides:
    `"detect"` (default) only records it, `"warn"` also reports to `on_violation`, `"block"`
    aborts the run with the language as tripwire metadata, `"translate"` replaces the text with
    a translation into the first target language (`translation_quality`: `"quality"` (default),
    `"balanced"` or `"speed"`), keeping the original in the metadata when `preserve_original`.
    `include_detection_details` logs every detection. The deterministic pass is
    `lingua-language-detector` (offline); `llm` says when the model is asked (`"never"`, the
    default without a `model`; `"when-unsure"`: only when lingua is below `threshold`, or for a
    translation). `error_strategy` says what a failed detector call means.

    Example::

        detector = LanguageDetector(model="openai/gpt-5-nano", target_languages=["English", "en"],
                                    strategy="translate", threshold=0.8)
        agent = Agent(name="multilingual", model="openai/gpt-5", input_processors=[detector])
    """

    id = "language-detector"
    name = "Language Detector"

    def __init__(
        self,
        *,
        model: str | LanguageModel | None = None,
        llm: LLMMode | None = None,
        target_languages: Sequence[str] | None = None,
        threshold: float = 0.7,
        strategy: LanguageStrategy = "detect",
        preserve_original: bool = True,
        min_text_length: int = 10,
        include_detection_details: bool = False,
        translation_quality: TranslationQuality = "quality",
        instructions: str | None = None,
        provider_options: dict[str, Any] | None = None,
        json_prompt_injection: bool = False,
        error_strategy: ErrorStrategy | None = None,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
    ) -> None:
        super().__init__()
        check_choice("strategy", strategy, get_args(LanguageStrategy))
        check_choice("translation_quality", translation_quality, get_args(TranslationQuality))
        check_threshold(threshold)
        self.target_languages: tuple[str, ...] = (
            tuple(target_languages) if target_languages else DEFAULT_TARGET_LANGUAGES
        )
        self.threshold = threshold
        self.strategy: LanguageStrategy = strategy
        self.preserve_original = preserve_original
        self.min_text_length = min_text_length
        self.include_detection_details = include_detection_details
        self.translation_quality: TranslationQuality = translation_quality
        self.llm: LLMMode = resolve_llm("LanguageDetector", model, llm)
        self.description = describe_detection(
            "Language detection (and translation)", self.llm, "lingua's statistics", "input"
        )
        if strategy == "translate" and self.llm == "never":
            raise ValueError("LanguageDetector strategy='translate' needs a `model` to translate with")
        schema = LanguageVerdict.model_json_schema()
        if strategy != "translate":
            schema["properties"].pop("translated_text", None)
        codes = list(dict.fromkeys([*LANGUAGE_NAMES, *(language_code(t) for t in self.target_languages)]))
        limits = JudgeLimits(
            order=("iso_code", "confidence", "translated_text"),
            enums={"iso_code": [c for c in codes if c != "unknown"]},
            free_text=("translated_text",),
        )
        self.detector: DetectorModel[LanguageVerdict] | None = (
            None
            if self.llm == "never"
            else DetectorModel(
                model,
                instructions=instructions or DEFAULT_INSTRUCTIONS,
                schema=LanguageVerdict,
                json_schema=schema,
                judge_limits=limits,
                schema_name="language_detection_result",
                provider_options=provider_options,
                json_prompt_injection=json_prompt_injection,
                label="LanguageDetector",
                max_output_tokens=max_output_tokens,
            )
        )
        self.error_strategy: ErrorStrategy = default_error_strategy(strategy, error_strategy)

    async def process_input(self, args: ProcessInputArgs) -> list[Message] | None:
        replaced: dict[str, Message] = {}
        for message in to_check(args.messages, input_ids(args)):
            text = message_text(message)
            if len(text) < self.min_text_length:
                continue
            verdict = await self.detect(text) or LanguageVerdict()
            if verdict.confidence is not None and verdict.confidence < self.threshold:
                continue
            if not self.is_non_target(verdict):
                iso_code = verdict.iso_code or language_code(self.target_languages[0])
                confidence = verdict.confidence or ASSUMED_CONFIDENCE
                if self.include_detection_details:
                    log.info(
                        "[LanguageDetector] content in target language: %s (%s) with confidence %.2f",
                        language_name(iso_code), iso_code, confidence,
                    )  # fmt: skip
                replaced[message.id] = self._annotate(
                    message, LanguageVerdict(iso_code=iso_code, confidence=confidence)
                )
                continue
            replaced[message.id] = self._handle(message, verdict, args.abort)
        if not replaced:
            return None
        return [replaced.get(m.id, m) for m in args.messages]

    async def detect(self, content: str) -> LanguageVerdict | None:
        """The detector's verdict on `content` (None when the detector failed)."""
        first = self.target_languages[0]
        prompt = f'Detect language of: "{content}"\n\nTarget: {"/".join(self.target_languages)}'
        if self.strategy == "translate":
            prompt += f". If not in {first}, translate to {first}. {QUALITY_HINTS[self.translation_quality]}"
        if self.detector is None:
            return self.lingua_verdict(content)
        if self.llm == "when-unsure":
            found = self.lingua_verdict(content)
            sure = found.iso_code is not None and (found.confidence or 0) >= self.threshold
            if sure and (self.strategy != "translate" or self.is_target_language(found.iso_code)):
                return found
        verdict = await judged(
            self,
            self.detector,
            prompt,
            error_strategy=self.error_strategy,
            fallback=lambda: self.lingua_verdict(content),
        )
        if verdict is not None and verdict.translated_text and not verdict.confidence:
            verdict.confidence = ASSUMED_CONFIDENCE
        return verdict

    def lingua_verdict(self, content: str) -> LanguageVerdict:
        """lingua's offline verdict on `content` (no model call)."""
        found = detect_language(content)
        if found is None:
            return LanguageVerdict()
        return LanguageVerdict(iso_code=found[0], confidence=found[1])

    def is_target_language(self, iso_code: str | None) -> bool:
        if not iso_code:
            return True
        code, name = iso_code.lower(), language_name(iso_code).lower()
        return any(language_code(t) == code or t.lower() == name for t in self.target_languages)

    def is_non_target(self, verdict: LanguageVerdict) -> bool:
        return bool(
            verdict.iso_code
            and verdict.confidence
            and verdict.confidence >= self.threshold
            and not self.is_target_language(verdict.iso_code)
        )

    def _handle(self, message: Message, verdict: LanguageVerdict, abort: Any) -> Message:
        iso_code = verdict.iso_code or ""
        language = language_name(iso_code) if iso_code else "Unknown"
        summary = (
            f"Language detected: {language} ({iso_code}) with confidence {(verdict.confidence or 0):.2f}"
        )
        detail = {
            "detected_language": language,
            "iso_code": iso_code,
            "confidence": verdict.confidence,
            "target_languages": list(self.target_languages),
        }
        if self.strategy == "block":
            abort(f"Non-target language detected: {summary}", metadata=detail)
        if self.include_detection_details:
            log.info("[LanguageDetector] %s", summary)
        if self.strategy == "warn":
            log.warning("[LanguageDetector] Non-target language: %s", summary)
            report(self, f"Non-target language: {summary}", detail)
        if self.strategy == "translate":
            translated = (verdict.translated_text or "").strip()
            if translated:
                return self._annotate(with_text(message, translated), verdict, original=message)
            log.warning("[LanguageDetector] no translation available, keeping the original: %s", summary)
        return self._annotate(message, verdict)

    def _annotate(
        self, message: Message, verdict: LanguageVerdict, original: Message | None = None
    ) -> Message:
        info: dict[str, Any] = {}
        if verdict.iso_code:
            info["detected_language"] = language_name(verdict.iso_code)
            info["iso_code"] = verdict.iso_code
        if verdict.confidence:
            info["confidence"] = verdict.confidence
        info["is_target_language"] = self.is_target_language(verdict.iso_code)
        info["target_languages"] = list(self.target_languages)
        if original is not None:
            translation: dict[str, Any] = {
                "original_language": language_name(verdict.iso_code) if verdict.iso_code else "Unknown",
                "target_language": self.target_languages[0],
            }
            if verdict.confidence:
                translation["translation_confidence"] = verdict.confidence
            info["translation"] = translation
            if self.preserve_original:
                info["original_content"] = message_text(original)
        return with_metadata(message, METADATA_KEY, info)
