"""`PresidioRecognizer`: names, places and dates (and any other entity Presidio knows) found
offline by presidio-analyzer's recognizers and spaCy NLP engine, for `PIIDetector(recognizer=...)`.
Needs the `presidio` extra and a spaCy pipeline; nothing is imported or loaded until the first
analysis (or `load()`)."""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sluicegate.errors import ConfigurationError, MissingExtraError
from sluicegate.guardrails.normalized import build_view
from sluicegate.guardrails.recognizer import Recognized

log = logging.getLogger(__name__)

DEFAULT_ENTITIES: tuple[str, ...] = ("PERSON", "LOCATION", "DATE_TIME")
"""What the pattern pass cannot find; emails, phones, cards and the like it finds faster."""
DEFAULT_SPACY_MODEL = "en_core_web_sm"
_TYPES = {
    "PERSON": "name",
    "LOCATION": "location",
    "DATE_TIME": "date",
    "NRP": "nrp",
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone",
    "CREDIT_CARD": "credit-card",
    "US_SSN": "ssn",
    "IP_ADDRESS": "ip-address",
    "IBAN_CODE": "iban",
    "URL": "url",
    "CRYPTO": "crypto-wallet",
}
"""Presidio entities as PIIDetector's detection types (others: lower case, `-` for `_`)."""
_OPTIONS = ("entities", "language", "score_threshold", "spacy_model")

_loading = threading.Lock()
_analyzers: dict[tuple[str, str], tuple[Any, threading.Lock]] = {}
"""Loaded analyzers by (language, spaCy pipeline), each with the lock its analyses take: every
recognizer of one pipeline shares it (a pipeline is hundreds of MB and seconds to load)."""


def _analyzer(language: str, spacy_model: str) -> tuple[Any, threading.Lock]:
    with _loading:
        loaded = _analyzers.get((language, spacy_model))
        if loaded is not None:
            return loaded
        try:
            from presidio_analyzer import AnalyzerEngine
            from presidio_analyzer.nlp_engine import NlpEngineProvider
        except ImportError as exc:
            raise _missing() from exc
        log.info("loading Presidio's analyzer with spaCy pipeline %r for %r", spacy_model, language)
        configuration = {
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": language, "model_name": spacy_model}],
        }
        try:
            engine = NlpEngineProvider(nlp_configuration=configuration).create_engine()
            analyzer = AnalyzerEngine(nlp_engine=engine, supported_languages=[language])
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"PresidioRecognizer: cannot load spaCy pipeline {spacy_model!r} for "
                f"language {language!r}: {exc}"
            ) from exc
        loaded = _analyzers[(language, spacy_model)] = (analyzer, threading.Lock())
        return loaded


def _missing() -> MissingExtraError:
    return MissingExtraError("presidio-analyzer", extra="presidio", feature="PresidioRecognizer")


def detection_type(entity: str) -> str:
    """The PIIDetector detection type of a Presidio entity (`PERSON` → `name`)."""
    return _TYPES.get(entity, entity.lower().replace("_", "-"))


class PresidioRecognizer:
    """Presidio's analyzer (its recognizers and spaCy NLP engine) as PIIDetector's offline
    recognizer, for names, places and dates without an LLM.

    - `entities`: the Presidio entities to report (default `PERSON`, `LOCATION`, `DATE_TIME`;
      any entity the analyzer supports for `language`, such as `NRP` or `US_DRIVER_LICENSE`).
      They are reported as `name`, `location`, `date`, ... (`[NAME]` with placeholders).
    - `language`: the text's language (default `"en"`); `spacy_model`: the spaCy pipeline
      for it (default `"en_core_web_sm"`: `python -m spacy download en_core_web_sm`; a larger
      one such as `en_core_web_lg` finds more). It must be installed: nothing is downloaded.
    - `score_threshold`: the lowest Presidio score reported (default 0.5); what it reports,
      PIIDetector acts on (its own `threshold` is for the model's detections).

    Unknown options raise `ConfigurationError`; without the `presidio` extra,
    `MissingExtraError`. Nothing is loaded until the first analysis: call `load()` at startup
    to pay the pipeline's load (seconds) and check `entities` then. Recognizers of the same
    pipeline share one loaded analyzer, whose analyses run one at a time.

    `analyze(text)` is usable on its own (e.g. to measure it against Presidio): it returns
    `Recognized(start, end, type, entity, score)` spans of `text`, found in its normalized
    view (see `guardrails.normalized`: zero-width characters cannot split a name) and mapped
    back to `text`.

    Example::

        from sluicegate.guardrails import PresidioRecognizer
        from sluicegate.processors import PIIDetector

        names = PresidioRecognizer(entities=["PERSON", "LOCATION"], score_threshold=0.6)
        pii = PIIDetector(recognizer=names, redaction_method="placeholder")
        agent = Agent(name="support", model="openai/gpt-5", output_processors=[pii])
        names.analyze("Ask Maria Lopez in Lisbon")  # [Recognized(4, 15, 'name', 'PERSON', 0.85), ...]
    """

    def __init__(
        self,
        *,
        entities: Sequence[str] | None = None,
        language: str = "en",
        score_threshold: float = 0.5,
        spacy_model: str = DEFAULT_SPACY_MODEL,
        **options: Any,
    ) -> None:
        if options:
            raise ConfigurationError(
                f"PresidioRecognizer: unknown option(s) {', '.join(sorted(options))}; "
                f"it accepts {', '.join(_OPTIONS)}"
            )
        if entities is None:
            entities = DEFAULT_ENTITIES
        if (
            isinstance(entities, str)
            or not entities
            or not all(isinstance(e, str) and e.strip() for e in entities)
        ):
            raise ConfigurationError(
                f"PresidioRecognizer: entities must be a non-empty list of entity names, got {entities!r}"
            )
        if not isinstance(language, str) or not language.strip():
            raise ConfigurationError(
                f"PresidioRecognizer: language must be a language code, got {language!r}"
            )
        if (
            isinstance(score_threshold, bool)
            or not isinstance(score_threshold, (int, float))
            or not 0 <= score_threshold <= 1
        ):
            raise ConfigurationError(
                f"PresidioRecognizer: score_threshold must be between 0 and 1, got {score_threshold!r}"
            )
        if not isinstance(spacy_model, str) or not spacy_model.strip():
            raise ConfigurationError(
                f"PresidioRecognizer: spacy_model must be a spaCy pipeline name, got {spacy_model!r}"
            )
        if importlib.util.find_spec("presidio_analyzer") is None:
            raise _missing()
        if not Path(spacy_model).exists() and importlib.util.find_spec(spacy_model) is None:
            raise ConfigurationError(
                f"PresidioRecognizer: the spaCy pipeline {spacy_model!r} is not installed "
                f"(nothing is downloaded at run time): python -m spacy download {spacy_model}"
            )
        self.entities: tuple[str, ...] = tuple(dict.fromkeys(e.strip() for e in entities))
        self.language = language
        self.score_threshold = float(score_threshold)
        self.spacy_model = spacy_model
        self._loaded: tuple[Any, threading.Lock] | None = None

    def __repr__(self) -> str:
        return (
            f"PresidioRecognizer(entities={list(self.entities)!r}, language={self.language!r}, "
            f"score_threshold={self.score_threshold!r}, spacy_model={self.spacy_model!r})"
        )

    def load(self) -> None:
        """Load the analyzer and its spaCy pipeline now (once per pipeline), and check that it
        supports every one of `entities` for `language` (`ConfigurationError` naming those it
        does not)."""
        self._load()

    def _load(self) -> tuple[Any, threading.Lock]:
        if self._loaded is not None:
            return self._loaded
        loaded = _analyzer(self.language, self.spacy_model)
        supported = set(loaded[0].get_supported_entities(language=self.language))
        unknown = [e for e in self.entities if e not in supported]
        if unknown:
            raise ConfigurationError(
                f"PresidioRecognizer: entities {unknown} are not supported for language "
                f"{self.language!r}; supported: {sorted(supported)}"
            )
        self._loaded = loaded
        return loaded

    def analyze(self, text: str) -> list[Recognized]:
        """The values of `entities` in `text`, as spans of `text` (found in its normalized
        view, mapped back), in order. Blocking and CPU-bound: loads the pipeline on first use."""
        if not text.strip():
            return []
        view = build_view(text)
        subject = text if view is None else view.text
        analyzer, lock = self._load()
        with lock:
            results = analyzer.analyze(
                text=subject,
                language=self.language,
                entities=list(self.entities),
                score_threshold=self.score_threshold,
            )
        found: list[Recognized] = []
        for result in results:
            start, end = (result.start, result.end) if view is None else view.origin(result.start, result.end)
            if end > start:
                found.append(
                    Recognized(
                        start, end, detection_type(result.entity_type), result.entity_type, result.score
                    )
                )
        found.sort(key=lambda r: (r.start, -r.end))
        return found
