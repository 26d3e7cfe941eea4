from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluicegate import Agent
from sluicegate.errors import TripWire
from sluicegate.guardrails.lead_screen import TailedRule, screen
from sluicegate.guardrails.normalized import build_view, spelled_email_hold
from sluicegate.guardrails.rule_matcher import RuleMatcher
from sluicegate.processors import (
    ProcessorViolation,
    ProcessOutputStreamArgs,
    RegexFilter,
    RegexFilterProcessor,
)
from sluicegate.processors.builtin.regex_filter import (
    PII_RULES,
    SECRET_RULES,
    URL_RULES,
    RegexRule,
    lead_initials,
    lead_screen,
    luhn_valid,
    required_char,
)
from sluicegate.request_context import RequestContext
from sluicegate.stream import Chunk
from sluicegate.stream.chunk import text_delta
from sluicegate.stream.payload import Payload
from sluicegate.testing import MockModel, text_step

VISA = "4111 1111 1111 1111"


def chunked_step(pieces: list[str]) -> list[Any]:
    step = text_step("".join(pieces))
    return [*step[:2], *({"type": "text-delta", "id": "t1", "delta": p} for p in pieces), *step[3:]]


def _abort(reason: str | None = None, *, retry: bool = False, metadata: Any = None) -> Any:
    raise TripWire(reason or "", retry=retry, metadata=metadata)


def drive(processor: RegexFilterProcessor, pieces: list[str]) -> list[str]:
    """Feed deltas then a text-end through the stream hook, as the runner does."""
    args = ProcessOutputStreamArgs(abort=_abort, request_context=RequestContext())
    out: list[str] = []
    for chunk in [*(text_delta("r", "t1", p) for p in pieces), Chunk("text-end", "r")]:
        args.part = chunk
        result = processor.process_output_stream(args)
        for item in result if isinstance(result, list) else [result]:
            if item is not None and item.type == "text-delta":
                out.append(item.payload.text)
    for item in processor.flush_output_stream(args):  # the end of the step
        if item.type == "text-delta":
            out.append(item.payload.text)
    return out


def test_presets_and_luhn() -> None:
    f = RegexFilter(presets=["pii"], strategy="redact")
    assert f.redact(f"card {VISA} ok") == "card [CREDIT_CARD] ok"
    assert "[CREDIT_CARD]" not in f.redact("card 4111 1111 1111 1112 ok")
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert (
        f.redact("mail a.b@example.com, call (555) 123-4567, ssn 123-45-6789")
        == "mail [EMAIL], call [PHONE], ssn [SSN]"
    )
    secrets = RegexFilter(presets=["secrets"], strategy="redact")
    assert (
        secrets.redact("key sk-proj-abcdefghijklmnopqrstuvwx and AKIAABCDEFGHIJKLMNOP")
        == "key [API_KEY] and [AWS_KEY]"
    )
    assert secrets.redact("Authorization: Bearer abc.def-ghi_jkl") == "Authorization: [BEARER_TOKEN]"
    assert secrets.redact("ghp_" + "a" * 36) == "[GITHUB_TOKEN]"
    assert (
        RegexFilter(presets=["urls"], strategy="redact").redact("see https://x.io/a?b=1 now")
        == "see [URL] now"
    )


def test_custom_rules_and_overlaps() -> None:
    f = RegexFilter(
        rules=[
            {"name": "id", "pattern": r"ID-\d+", "replacement": "[ID]"},
            {"name": "num", "pattern": re.compile(r"\d{3,}")},
        ],
        strategy="redact",
    )
    assert f.redact("see ID-12345 and 9999") == "see [ID] and [REDACTED]"
    with pytest.raises(ValueError):
        RegexFilter()


async def test_block_is_default_and_blocks_input() -> None:
    model = MockModel([text_step("ok")])
    agent = Agent(name="r", model=model, input_processors=[RegexFilter(presets=["pii"])])
    result = await agent.generate("my email is a@b.co")
    assert result.tripwire is not None and "email" in result.tripwire.reason
    assert result.tripwire.metadata["matches"][0]["match"] == "[REDACTED_MATCH]"
    assert model.calls == []


async def test_redact_input() -> None:
    model = MockModel([text_step("ok")])
    agent = Agent(name="r", model=model, input_processors=[RegexFilter(presets=["pii"], strategy="redact")])
    await agent.generate("my email is a@b.co")
    assert model.calls[0].prompt[-1]["content"][0]["text"] == "my email is [EMAIL]"


async def test_warn_passes_through_and_reports() -> None:
    seen: list[ProcessorViolation] = []
    guard = RegexFilter(presets=["pii"], strategy="warn")
    guard.on_violation = seen.append
    model = MockModel([text_step("ok")])
    await Agent(name="r", model=model, input_processors=[guard]).generate("my email is a@b.co")
    assert model.calls[0].prompt[-1]["content"][0]["text"] == "my email is a@b.co"
    assert seen[0].detail["matches"][0]["rule"] == "email"


async def test_phase_option() -> None:
    output_only = RegexFilter(presets=["pii"], phase="output", strategy="redact")
    model = MockModel([text_step("write to x@y.org")])
    agent = Agent(name="r", model=model, input_processors=[output_only], output_processors=[output_only])
    result = await agent.generate("I am a@b.co")
    assert model.calls[0].prompt[-1]["content"][0]["text"] == "I am a@b.co"
    assert result.text == "write to [EMAIL]"
    input_only = RegexFilter(presets=["pii"], phase="input", strategy="redact")
    model = MockModel([text_step("write to x@y.org")])
    agent = Agent(name="r", model=model, input_processors=[input_only], output_processors=[input_only])
    result = await agent.generate("I am a@b.co")
    assert (
        model.calls[0].prompt[-1]["content"][0]["text"] == "I am [EMAIL]"
        and result.text == "write to x@y.org"
    )


async def test_include_redacted_values() -> None:
    for include in (False, True):
        seen: list[ProcessorViolation] = []
        guard = RegexFilter(presets=["pii"], strategy="redact", include_redacted_values=include)
        guard.on_violation = seen.append
        await Agent(name="r", model=MockModel([text_step("ok")]), input_processors=[guard]).generate("a@b.co")
        entry = seen[0].detail["redactions"][0]
        assert entry["rule"] == "email" and (entry.get("value") == "a@b.co") is include


async def test_stream_redacts_a_match_split_across_chunks(collect: Any) -> None:
    pieces = ["Contact jo", "hn.doe@exa", "mple.com or ", "4111 1111 ", "1111 1111 thanks"]
    agent = Agent(
        name="r",
        model=MockModel([chunked_step(pieces)]),
        output_processors=[RegexFilter(presets=["pii"], strategy="redact")],
    )
    chunks = await collect(await agent.stream("hi"))
    emitted = [c.payload.text for c in chunks if c.type == "text-delta"]
    assert "".join(emitted) == "Contact [EMAIL] or [CREDIT_CARD] thanks"
    assert not any("john" in e or "4111" in e for e in emitted)
    types = [c.type for c in chunks]
    assert types.index("text-end") > max(i for i, t in enumerate(types) if t == "text-delta")


async def test_stream_block_catches_split_match_before_any_of_it_leaks(collect: Any) -> None:
    agent = Agent(
        name="r",
        model=MockModel([chunked_step(["ssn 123-", "45-6789 end"])]),
        output_processors=[RegexFilter(presets=["pii"])],
    )
    chunks = await collect(await agent.stream("hi"))
    assert chunks[-1].type == "tripwire"
    assert "123" not in "".join(c.payload.text for c in chunks if c.type == "text-delta")


def test_hold_back_is_minimal() -> None:
    f = RegexFilter(rules=[{"name": "ticket", "pattern": r"TICKET-\d{4}"}], strategy="redact")
    # Nothing here can start a match: every chunk goes out whole, at once.
    assert drive(f, ["hello ", "world ", "again"]) == ["hello ", "world ", "again"]
    # Only the possible start of a match waits.
    assert drive(f, ["see TICK", "ET-12", "34 now"]) == ["see ", "[REDACTED] now"]


def test_a_match_longer_than_the_carryover_is_held_whole_until_it_ends() -> None:
    long_url = ["https://", "example.com/", "a" * 30, "/b", " done"]
    for size in (None, 128, 10):
        f = RegexFilter(presets=["urls"], strategy="redact", stream_carryover_size=size)
        assert drive(f, long_url) == ["[URL] done"], size


JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" * 12 + "." + "c2lnbmF0dXJl" * 4


@pytest.mark.parametrize("step", [1, 5, 17, 64])
def test_a_jwt_longer_than_the_default_carryover_never_reaches_the_client_whole(step: int) -> None:
    text = f"token {JWT} ok"
    pieces = [text[i : i + step] for i in range(0, len(text), step)]
    out = "".join(drive(RegexFilter(presets=["secrets"], strategy="redact"), pieces))
    assert out == "token [JWT] ok"


def test_a_match_longer_than_max_value_chars_is_withheld_whole_and_reported(caplog: Any) -> None:
    reports: list[Any] = []
    f = RegexFilter(presets=["secrets"], strategy="redact", max_value_chars=100)
    f.on_violation = reports.append
    text = f"token {JWT} ok and more"
    pieces = [text[i : i + 9] for i in range(0, len(text), 9)]
    with caplog.at_level("WARNING"):
        out = "".join(drive(f, pieces))
    assert out == "token  ok and more"
    assert any("max_value_chars=100" in r.getMessage() for r in caplog.records)
    assert len(reports) == 1 and reports[0].detail["redactions"][0]["rule"] == "max_value_chars"


def test_holding_a_long_forming_match_stays_linear() -> None:
    # 100,000 characters in 4-character chunks: an email's domain is at most 253 characters, so
    # past that the text is released as text (it was withheld whole at max_value_chars before),
    # and each chunk costs the same
    import time

    token = "x@" + "a" * 100_000
    f = RegexFilter(presets=["pii", "secrets", "urls"], strategy="redact")
    began = time.perf_counter()
    out = drive(f, [*(token[i : i + 4] for i in range(0, len(token), 4)), " end"])
    assert time.perf_counter() - began < 3 and "".join(out) == token + " end"


def test_a_long_forming_secret_is_still_withheld_past_max_value_chars() -> None:
    """Secrets keep their own (longer) bound: a key still being written is held up to
    `max_value_chars`, then withheld whole."""
    token = "sk-" + "a" * 20_000
    f = RegexFilter(presets=["pii", "secrets"], strategy="redact")
    out = "".join(drive(f, [*(token[i : i + 50] for i in range(0, len(token), 50)), " end"]))
    assert "aaaa" not in out and out.endswith(" end")


@pytest.mark.parametrize("bad", [0, -1, 2.5, "9", False])
def test_max_value_chars_must_be_a_positive_number_of_characters(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_value_chars"):
        RegexFilter(presets=["secrets"], max_value_chars=bad)


ALPHABET = st.sampled_from(
    [
        *list("ab @.-1234 x"),
        "john@ex.com",
        VISA,
        "123-45-6789",
        "https://a.b/c",
        "Bearer tok_abcdef12",
        "AKIAABCDEFGHIJKLMNOP",
        "\n",
    ]
)


# Built once per module (compiling every preset takes ~0.1 s); a filter keeps its stream state
# in the hook's args, so examples sharing it stay independent.
UNCAPPED = RegexFilter(presets=["pii", "secrets", "urls"], strategy="redact", stream_carryover_size=None)
ALL_PRESETS = RegexFilter(presets=["pii", "secrets", "urls"], strategy="redact")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ALPHABET, max_size=30), st.data())
def test_stream_output_equals_redacted_full_text(atoms: list[str], data: st.DataObject) -> None:
    text = "".join(atoms)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert "".join(drive(UNCAPPED, pieces)) == UNCAPPED.redact(text)


def test_a_complete_match_that_more_text_could_extend_is_held() -> None:
    # `regex` reports "john@ex.com" in "john@ex.com.a" as complete, yet the email may go on.
    f = RegexFilter(presets=["pii"], strategy="redact")
    text = "mail john@ex.com.aa now"
    for cut in range(len(text) + 1):
        for second in range(cut, len(text) + 1):
            pieces = [text[:cut], text[cut:second], text[second:]]
            assert "".join(drive(f, pieces)) == "mail [EMAIL] now", pieces


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (r"TICKET-\d{6}", True),
        (r"\bsk-[A-Za-z0-9]{20,}", True),
        (r"(?:\+?1[-.\s]?)?\d{3}", True),
        (r"[a-zA-Z0-9._%+-]+@[a-z]+", False),  # may start at any letter: no useful screen
        (r"\w*x", False),  # may start anywhere
        (r"(?<=\d{3})abc", True),  # a longer lookbehind is dropped, which only widens the screen
        (r"(a)\1", True),
        (r"a?", False),  # can match empty
        # Letter-led rules are screened when a fixed character or a class without letters
        # follows within a few characters: the IBAN's `[A-Z]{2}\d{2}`, an IPv6 group's `:`.
        (r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}\b", True),
        (r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:|:){2,7}[0-9A-Fa-f]{1,4}", True),
        (r"\b[A-Z]{2}[a-z]{3}", False),  # letters only: prose would hit it everywhere
        (r"[a-f]{1,9}:", False),  # too many counts to follow one by one: `:` stays out of reach
    ],
)
def test_lead_screen_is_derived_only_when_selective(rule: str, expected: bool) -> None:
    import regex

    assert (lead_screen(regex.compile(rule)) is not None) is expected


def test_every_preset_rule_is_screened_or_tailed() -> None:
    """No preset rule costs a `regex` partial search on every streamed chunk: each is ruled
    out by the stdlib lead screen (or, for the email, answered by its stdlib tail)."""
    matcher = RuleMatcher((*PII_RULES, *SECRET_RULES, *URL_RULES))
    assert matcher._unscreened == ()
    assert [tailed.rule.name for tailed in matcher._tailed] == ["email"]


LEAD_TEXT = st.lists(
    st.sampled_from(
        [
            *"askASKIe-_:/.@ (1+)0934hxtpBbrJyzNG\n[",
            *("sk-", "AKIA", "http", "eyJ", "-----"),
            *("DE89", "GB", "fe80", "::", "0db8:", "abcd", "F", "12"),
            *("é", "€", "٣", "_"),  # a non-ASCII word character, a symbol, a non-ASCII digit
            # case-blind leads in other cases, and letters stdlib's IGNORECASE folds onto ASCII
            *("API_KEY", "Secret", "HTTPS", "bearer", "ſ", "\u212a", "\u0130", "ApI"),
        ]
    ),
    max_size=25,
).map("".join)


SCREENED_RULES = [
    rule
    for rule in (*PII_RULES, *SECRET_RULES, *URL_RULES, RegexRule("t", r"TICKET-\d{6}"))
    if lead_screen(rule.compiled) is not None
]
# The one screen a matcher searches (word-start leads behind a shared `(?<!\w)`).
JOINT_SCREEN = re.compile(str(screen([rule.compiled for rule in SCREENED_RULES])))
LEADS = [(rule, re.compile(str(lead_screen(rule.compiled)))) for rule in SCREENED_RULES]


@settings(max_examples=300, deadline=None)
@given(LEAD_TEXT)
def test_lead_screens_never_miss_where_a_rule_can_start(text: str) -> None:
    """Soundness of the fast path: wherever a rule's (partial) match begins, its lead matches."""
    joint = JOINT_SCREEN
    for rule, lead in LEADS:
        for position in range(len(text)):
            match = rule.compiled.match(text, position, partial=True)
            if match is not None and match.end() > position:
                assert lead.match(text, position), (rule.name, text, position)
                assert joint.match(text, position), (rule.name, text, position)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ALPHABET, max_size=20), st.data())
def test_held_text_always_starts_where_a_match_could(atoms: list[str], data: st.DataObject) -> None:
    """Minimal hold-back: whatever is held begins at a possible (partial) match of some rule."""
    text = "".join(atoms)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    f = ALL_PRESETS
    args = ProcessOutputStreamArgs(abort=_abort, request_context=RequestContext())
    for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True):
        args.part = text_delta("r", "t1", text[a:b])
        f.process_output_stream(args)
        streams = args.state.get("regex_filter_stream")
        stream = None if streams is None else streams.text
        if stream is not None and stream.carry:
            buffer = stream.context + stream.carry
            pos = len(stream.context)
            if f._matcher.any_rule.match(buffer, pos, partial=True) is None:
                # Or a spelled-out address still forming ("jane at ex dot"), a value a run of
                # digit groups was split into (held whole while a later match forms), or a match
                # in the normalized view (split digits at the end may still form a number).
                if spelled_email_hold(buffer, pos) == pos:
                    continue
                if any(start == pos for start, _, _ in f.find(buffer)):
                    continue
                view = build_view(buffer)
                assert view is not None
                assert f._matcher.any_rule.match(view.text, view.index(pos), partial=True) is not None


def test_stream_state_is_one_object_and_a_match_spans_text_ids() -> None:
    f = RegexFilter(rules=[{"name": "t", "pattern": r"TICKET-\d{4}"}], strategy="redact")
    args = ProcessOutputStreamArgs(abort=_abort, request_context=RequestContext())
    args.part = text_delta("r", "t1", "see TICK")
    assert f.process_output_stream(args).payload.text == "see "  # type: ignore[union-attr]
    assert list(args.state) == ["regex_filter_stream"]
    for marker in (Chunk("text-end", "r", Payload(id="t1")), Chunk("text-start", "r", Payload(id="t2"))):
        args.part = marker
        assert f.process_output_stream(args) is None  # held in order with the text
    args.part = text_delta("r", "t2", "ET-1234 other")
    out = f.process_output_stream(args)
    assert isinstance(out, list)
    assert [c.type for c in out] == ["text-end", "text-start", "text-delta"]
    assert out[2].payload.text == "[REDACTED] other"


TAILED_RULES = [rule for rule in (*PII_RULES, *SECRET_RULES, *URL_RULES) if rule.tail is not None]
TAIL_TEXT = st.lists(
    st.sampled_from(
        [*"aZq09._%+-@ ,!#\n", "@@", "..", "ab.cd", "x@y", "q@w.er", "john@ex.com", "a@b.co.", VISA]
    ),
    max_size=20,
).map("".join)


def test_the_email_preset_has_a_tail_and_it_compiles_for_stdlib() -> None:
    assert [rule.name for rule in TAILED_RULES] == ["email"]
    assert all(TailedRule.of(rule) is not None for rule in TAILED_RULES)


@settings(max_examples=500, deadline=None)
@given(TAIL_TEXT)
def test_tails_match_exactly_where_text_could_still_grow_into_a_match(text: str) -> None:
    """Each tail is the prefix closure of its rule: it matches from a position exactly when the
    `regex` module finds a (partial or complete) match spanning the rest of the text."""
    for rule in TAILED_RULES:
        tail = re.compile(rule.tail or "")
        for position in range(len(text)):
            expected = rule.compiled.fullmatch(text, position, partial=True) is not None
            assert (tail.match(text, position) is not None) is expected, (rule.name, text, position)


@settings(max_examples=500, deadline=None)
@given(TAIL_TEXT, st.data())
def test_tailed_hold_agrees_with_the_regex_partial_search(text: str, data: st.DataObject) -> None:
    """The stdlib path tells the stream what the `regex` partial search would: where a match
    may still be forming, or that a complete match that more text cannot change lies ahead."""
    pos = data.draw(st.integers(0, len(text)))
    size = len(text)
    for rule in TAILED_RULES:
        tailed = TailedRule.of(rule)
        assert tailed is not None
        first = rule.compiled.search(text, pos, partial=True)
        if first is None:
            expected = size
        elif not first.partial and first.end() < size:
            expected = -1
        else:
            expected = first.start()
        assert tailed.hold_from(text, pos, size) == expected, (rule.name, text, pos)


def test_a_rule_tail_is_used_when_given_and_custom_rules_stay_generic() -> None:
    # A tail that never matches claims nothing can be forming: the honoured option shows as the
    # start of a match going out at once (which is why a tail must be exact).
    never = RegexFilter(rules=[{"name": "t", "pattern": r"[a-z]+@x", "tail": r"(?!)"}], strategy="redact")
    assert drive(never, ["ab", "c@x!"]) == ["ab", "[REDACTED]!"]
    exact = RegexFilter(rules=[RegexRule("t", r"[a-z]+@x", tail=r"[a-z]++@?\Z")], strategy="redact")
    assert drive(exact, ["ab", "c@x!"]) == ["[REDACTED]!"]
    generic = RegexFilter(rules=[{"name": "t", "pattern": r"[a-z]+@x"}], strategy="redact")
    assert drive(generic, ["ab", "c@x!"]) == ["[REDACTED]!"]
    # A pattern only `regex` reads keeps the generic path even with a tail.
    regex_only = RegexFilter(rules=[RegexRule("t", r"\p{L}+@x", tail=r"(?!)")], strategy="redact")
    assert drive(regex_only, ["ab", "c@x!"]) == ["[REDACTED]!"]


def test_required_char_and_lead_initials() -> None:
    import regex

    assert required_char(regex.compile(r"[a-z]+@[a-z]+")) == "@"
    assert required_char(regex.compile(r"(?:a|b)+")) is None
    assert required_char(regex.compile(r"[0-9]+k", regex.IGNORECASE)) is None  # k or K
    assert lead_initials(regex.compile(r"\bsk-[a-z]{4}")) == "(?:s)"
    assert lead_initials(regex.compile(r"[a-z]+@x")) is None


@pytest.mark.parametrize("tail", ["-AKIAABCDEFGHIJKLMNOP end", "AKIAABCDEFGHIJKLMNOP end"])
def test_a_complete_match_does_not_hide_an_earlier_one_still_forming(tail: str) -> None:
    # `regex`'s partial search of several rules reports the complete SSN, not the API key still
    # forming before it: the key's start must be held all the same.
    head = "say api_key=123-45-6789" + ("" if tail.startswith("-") else "-")
    f = RegexFilter(presets=["pii", "secrets"], strategy="redact")
    assert f.redact(head + tail) == "say [API_KEY] end"
    assert "".join(drive(f, [head, tail])) == "say [API_KEY] end"


def test_the_joint_screen_drops_covered_leads_and_lists_a_case_blind_lead_in_its_cases() -> None:
    """The screen's cost per position is its alternatives: a lead another one without
    assertions always matches with is left out, and a case-blind lead starts with a plain
    class stdlib tests before entering it (not a `(?i:...)` scope it enters everywhere)."""
    import regex

    digit = regex.compile(r"\d")
    assert screen([digit, regex.compile(r"\b\d{3}-\d"), regex.compile(r"(?<![\w.])\d\.")]) == screen([digit])
    blind = str(screen([regex.compile(r"(?i)secret\s*=")]))
    assert blind.startswith("[Ssſ]") and not blind.startswith("(?i")
    joint = re.compile(str(screen([regex.compile(r"(?i)secret\s*="), regex.compile(r"\d{3}-")])))
    for text, position in (("my SECRET=", 3), ("xſecret", 1), ("a 123-", 2), ("a sECr", 2)):
        assert joint.search(text) is not None and joint.search(text).start() == position, text
    assert joint.search("the secure set of 12 ") is None


def test_the_joint_screen_keeps_each_rules_idea_of_a_word() -> None:
    import re as stdlib_re

    import regex

    # Under ASCII, "é" is no word character: `\bAB` may start right after it; in Unicode not.
    ascii_rule = regex.compile(r"\bAB\d", regex.ASCII)
    unicode_rule = regex.compile(r"\bCD\d")
    joint = stdlib_re.compile(str(screen([ascii_rule, unicode_rule])))
    assert ascii_rule.search("éAB1") is not None and joint.search("éAB1") is not None
    assert unicode_rule.search("éCD1") is None and joint.search("éCD1") is None
    assert joint.search("x CD1") is not None and joint.search("xCD1") is None
