"""Stream safety of the guardrails: for any chunking, no fragment of a secret reaches the client
or the stored response — on text, reasoning and tool results, for `RegexFilter`, `PIIDetector`
(with a detector that only reports a secret it sees whole), both chained, two such judges
side by side, each knowing only some of the secrets, and two kept apart by a filter."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluicegate import Agent, create_tool
from sluicegate.processors import PIIDetector, RegexFilter
from sluicegate.testing import MockModel, text_step, tool_call_step

from .conftest import detector_prompt, verdict

EMAILS = ["alice.smith@example.org", "bob_jones+news@mail.co.uk"]
CARDS = ["4111 1111 1111 1111", "5500005555555559"]
KEYS = ["sk-proj-AbCdEfGhIjKlMnOpQrStUvWx", "AKIAQWERTYUIOPASDFGH"]
SECRETS = [*EMAILS, *CARDS, *KEYS]
FILLER = ["Hello", "there,", "the", "answer", "is", "here:", "thanks.", "ok", "and", "then", "\n"]


def whole_secret_detector(calls: int = 200, secrets: list[str] = SECRETS) -> MockModel:
    """A PII detector that reports each of `secrets` it sees whole in its content, and nothing
    else."""

    def step(options: Any) -> list[dict[str, Any]]:
        prompt = detector_prompt(options)
        found = [
            {"type": "email" if "@" in s else "api-key", "value": s, "confidence": 0.99}
            for s in secrets
            if s in prompt
        ]
        return verdict({"detections": found} if found else {})

    return MockModel([step] * calls)


# Regex filters keep no stream state of their own (it lives in the hook's args), so examples
# share one of each; the detectors' mock judges count their calls, so those are built per run.
PII_AND_SECRETS = RegexFilter(presets=["pii", "secrets"], strategy="redact")
SECRETS_ONLY = RegexFilter(presets=["secrets"], strategy="redact")


def guards(kind: str) -> list[Any]:
    regex = PII_AND_SECRETS
    pii = PIIDetector(
        model=whole_secret_detector(),
        strategy="redact",
        redaction_method="placeholder",
        window_chars=48,
        overlap_chars=32,
    )
    if kind == "emails+keys":
        # two judges side by side (one panel): one knows only the emails, the other the rest
        emails = PIIDetector(
            model=whole_secret_detector(secrets=EMAILS),
            redaction_method="placeholder",
            window_chars=48,
            overlap_chars=32,
        )
        others = PIIDetector(
            model=whole_secret_detector(secrets=[*CARDS, *KEYS]),
            redaction_method="hash",
            window_chars=40,
            overlap_chars=30,
        )
        others.id = "pii-detector-cards-and-keys"
        return [emails, others]
    if kind == "emails,keys-filter,cards":
        # one chain judged at once across a filter: each knows only some of the secrets, and
        # the second judge judges ahead of time text the first one then redacts
        emails = PIIDetector(
            model=whole_secret_detector(secrets=EMAILS),
            redaction_method="placeholder",
            window_chars=48,
            overlap_chars=32,
        )
        cards = PIIDetector(
            model=whole_secret_detector(secrets=CARDS),
            redaction_method="placeholder",
            window_chars=40,
            overlap_chars=30,
        )
        cards.id = "pii-detector-cards"
        return [emails, SECRETS_ONLY, cards]
    return {"regex": [regex], "pii": [pii], "regex+pii": [regex, pii], "pii+regex": [pii, regex]}[kind]


def fragments(secret: str) -> set[str]:
    return {secret[i : i + 6] for i in range(len(secret) - 5)}


def leaked(haystack: str) -> list[str]:
    return [f for s in SECRETS for f in fragments(s) if f in haystack]


def split(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *cuts})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


texts = st.lists(st.sampled_from(FILLER + SECRETS), min_size=1, max_size=16).map(" ".join)
kinds = st.sampled_from(["regex", "pii", "regex+pii", "pii+regex", "emails+keys", "emails,keys-filter,cards"])


def delta_parts(kind: str, pieces: list[str]) -> list[dict[str, Any]]:
    return [{"type": kind, "id": "x1", "delta": piece} for piece in pieces]


def answer_step(channel: str, pieces: list[str]) -> list[dict[str, Any]]:
    step = text_step("ok")
    if channel == "text":
        return [step[0], step[1], *delta_parts("text-delta", pieces), *step[3:]]
    return [
        step[0],
        {"type": "reasoning-start", "id": "x1"},
        *delta_parts("reasoning-delta", pieces),
        {"type": "reasoning-end", "id": "x1"},
        *step[1:],
    ]


async def run_and_collect(agent: Agent) -> tuple[str, str]:
    output = await agent.stream("hi")
    chunks = [chunk async for chunk in output.full_stream]
    client = json.dumps([c.to_dict() for c in chunks], default=str)
    messages = (await output.response).messages
    stored = json.dumps([m.to_dict() for m in messages], default=str)
    return client, stored


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, data=st.data(), kind=kinds, channel=st.sampled_from(["text", "reasoning"]))
async def test_no_fragment_of_a_streamed_secret_reaches_the_client_or_the_store(
    text: str, data: st.DataObject, kind: str, channel: str
) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    agent = Agent(
        name="s", model=MockModel([answer_step(channel, split(text, cuts))]), output_processors=guards(kind)
    )
    client, stored = await run_and_collect(agent)
    assert leaked(client) == [] and leaked(stored) == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, kind=kinds)
async def test_no_fragment_of_a_secret_in_a_tool_result_reaches_the_client_the_store_or_the_model(
    text: str, kind: str
) -> None:
    async def lookup(args: Any, context: Any) -> dict[str, Any]:
        return {"rows": [{"note": text}], "count": 1}

    tool = create_tool(id="lookup", description="Look it up", input_schema={"type": "object"}, execute=lookup)
    model = MockModel([tool_call_step(("c1", "lookup", {"q": "x"})), text_step("done")])
    agent = Agent(name="s", model=model, tools=[tool], output_processors=guards(kind))
    client, stored = await run_and_collect(agent)
    assert leaked(client) == [] and leaked(stored) == []
    assert leaked(json.dumps(model.calls[1].prompt, default=str)) == []


async def test_what_memory_stores_is_what_the_client_received(tmp_path: Any) -> None:
    from sluicegate.memory import Memory
    from sluicegate.storage import SQLiteStore

    store = SQLiteStore(str(tmp_path / "memory.db"))
    try:

        async def lookup(args: Any, context: Any) -> dict[str, Any]:
            return {"note": f"owner {EMAILS[0]} key {KEYS[0]}"}

        tool = create_tool(
            id="lookup", description="Look it up", input_schema={"type": "object"}, execute=lookup
        )
        pieces = split(f"mail {EMAILS[1]} or card {CARDS[0]} thanks", [7, 15, 26, 33])
        model = MockModel([tool_call_step(("c1", "lookup", {})), answer_step("text", pieces)])
        agent = Agent(
            name="s",
            model=model,
            tools=[tool],
            memory=Memory(storage=store),
            output_processors=guards("regex+pii"),
        )
        output = await agent.stream("hi", memory={"thread": "t1", "resource": "u1"})
        chunks = [chunk async for chunk in output.full_stream]
        client_text = "".join(c.payload.text for c in chunks if c.type == "text-delta")
        stored = await store.list_messages("t1")
        stored_dump = json.dumps([m.to_dict() for m in stored], default=str)
        assert (
            leaked(stored_dump) == [] and leaked(json.dumps([c.to_dict() for c in chunks], default=str)) == []
        )
        assert stored[-1].role == "assistant" and client_text in stored[-1].text
    finally:
        await store.close()


# a carryover below the key lengths: a match still forming is held whole all the same
SECRETS_CARRYOVER_16 = RegexFilter(presets=["secrets"], strategy="redact", stream_carryover_size=16)
LONG_KEY = "sk-proj-" + "Zq7Xw2Lm9Rt4Vb8Nc3Hj6Kp1Ys5Df0Ga" * 4  # 136 characters: longer than both windows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(st.sampled_from([*FILLER, KEYS[0], LONG_KEY]), min_size=1, max_size=8),
    data=st.data(),
    sizes=st.sampled_from([(40, 30), (48, 32), (64, 8)]),
    kind=st.sampled_from(["pii", "regex", "regex+pii"]),
)
async def test_a_value_longer_than_the_overlap_or_the_window_never_reaches_the_client_whole(
    words: list[str], data: st.DataObject, sizes: tuple[int, int], kind: str
) -> None:
    text = " ".join(words)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    secrets = [KEYS[0], LONG_KEY]
    pii = PIIDetector(
        model=whole_secret_detector(secrets=secrets),
        redaction_method="placeholder",
        window_chars=sizes[0],
        overlap_chars=sizes[1],
    )
    regex = SECRETS_CARRYOVER_16
    chain = {"pii": [pii], "regex": [regex], "regex+pii": [regex, pii]}[kind]
    agent = Agent(
        name="s", model=MockModel([answer_step("text", split(text, cuts))]), output_processors=chain
    )
    client, stored = await run_and_collect(agent)
    for secret in secrets:
        pieces = {secret[i : i + 12] for i in range(len(secret) - 11)}
        assert not [p for p in pieces if p in client or p in stored]


async def test_a_key_longer_than_the_overlap_split_before_its_last_character_is_redacted() -> None:
    # the example that once leaked: window 40, overlap 30, a 32-character key twice
    text = f"{KEYS[0]} {KEYS[0]}"
    pii = PIIDetector(
        model=whole_secret_detector(secrets=[KEYS[0]]),
        redaction_method="placeholder",
        window_chars=40,
        overlap_chars=30,
    )
    agent = Agent(
        name="s", model=MockModel([answer_step("text", [text[:-1], text[-1:]])]), output_processors=[pii]
    )
    client, stored = await run_and_collect(agent)
    assert KEYS[0][1:] not in client and KEYS[0][1:] not in stored
    assert leaked(client) == [] and leaked(stored) == []


async def test_a_value_longer_than_max_value_chars_is_redacted_whole_and_logged(caplog: Any) -> None:
    token = "eyJhbGciOi" + "JIUzI1NiJ9x" * 12  # 142 characters, never reported by the detector
    text = f"here {token} done and more words after"
    pii = PIIDetector(
        model=whole_secret_detector(secrets=[]),
        redaction_method="placeholder",
        window_chars=40,
        overlap_chars=30,
        max_value_chars=60,
    )
    reports: list[Any] = []
    pii.on_violation = reports.append
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    agent = Agent(name="s", model=MockModel([answer_step("text", pieces)]), output_processors=[pii])
    with caplog.at_level("WARNING", logger="sluicegate.processors.guardrails"):
        output = await agent.stream("hi")
        released = "".join([c.payload.text async for c in output.full_stream if c.type == "text-delta"])
    assert released == "here  done and more words after"
    assert any("max_value_chars=60" in r.getMessage() for r in caplog.records)
    assert [r.detail["reason"] for r in reports] == ["max_value_chars"]
    assert reports[0].detail["start"] == 5  # the value's start: nothing of it went out


async def test_a_value_up_to_max_value_chars_is_held_and_released_whole() -> None:
    token = "eyJhbGciOi" + "JIUzI1NiJ9x" * 12
    text = f"here {token} done"
    pii = PIIDetector(model=whole_secret_detector(secrets=[]), window_chars=40, overlap_chars=30)
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    agent = Agent(name="s", model=MockModel([answer_step("text", pieces)]), output_processors=[pii])
    output = await agent.stream("hi")
    released = "".join([c.payload.text async for c in output.full_stream if c.type == "text-delta"])
    assert released == text


@pytest.mark.parametrize("bad", [0, -5, 1.5, "100", True])
def test_max_value_chars_must_be_a_positive_number_of_characters(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_value_chars"):
        PIIDetector(model=whole_secret_detector(), max_value_chars=bad)
