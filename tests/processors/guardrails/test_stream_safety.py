"""Stream safety of the guardrails: for any chunking, no fragment of a secret reaches the client
or the stored response — on text, reasoning and tool results, for `RegexFilter`, `PIIDetector`
(with a detector that only reports a secret it sees whole), both chained, and two such judges
side by side, each knowing only some of the secrets."""

from __future__ import annotations

import itertools
import json
from typing import Any

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


def guards(kind: str) -> list[Any]:
    regex = RegexFilter(presets=["pii", "secrets"], strategy="redact")
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
    return {"regex": [regex], "pii": [pii], "regex+pii": [regex, pii], "pii+regex": [pii, regex]}[kind]


def fragments(secret: str) -> set[str]:
    return {secret[i : i + 6] for i in range(len(secret) - 5)}


def leaked(haystack: str) -> list[str]:
    return [f for s in SECRETS for f in fragments(s) if f in haystack]


def split(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *cuts})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


texts = st.lists(st.sampled_from(FILLER + SECRETS), min_size=1, max_size=16).map(" ".join)
kinds = st.sampled_from(["regex", "pii", "regex+pii", "pii+regex", "emails+keys"])


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
