"""Streamed tool-call arguments are judged on what their JSON decodes to (issue 30, finding 2).

A model streaming `{"to": "jane.doe\\u0040example.com"}` in small deltas, a card number as an
exponent float, a fully `\\u`-escaped address: the deltas the client joins must not decode to
the value, under `RegexFilter` and the offline `PIIDetector`, redacting or blocking; under
block no delta carrying any part of the value goes out before the tripwire."""

from __future__ import annotations

import itertools
import json
import random
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sluicegate import Agent, create_tool
from sluicegate.guardrails.json_stream import lenient_text
from sluicegate.processors import PIIDetector, Processor, RegexFilter
from sluicegate.stream.chunk import Chunk
from sluicegate.testing import MockModel, text_step

GUARDS: dict[str, Processor] = {
    "regex-filter-redact": RegexFilter(presets=["pii"], strategy="redact"),
    "regex-filter-block": RegexFilter(presets=["pii"], strategy="block"),
    "pii-detector-redact": PIIDetector(),
    "pii-detector-block": PIIDetector(strategy="block"),
}
"""Built once: their stream state lives in each run's hook args."""


def tool_step(raw: str, cuts: list[int]) -> list[dict[str, Any]]:
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(raw)}), len(raw)]
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-input-start", "id": "c1", "toolName": "send"},
        *({"type": "tool-input-delta", "id": "c1", "delta": raw[a:b]} for a, b in itertools.pairwise(bounds)),
        {"type": "tool-input-end", "id": "c1"},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "send", "input": raw},
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]


async def stream(guard: Processor, raw: str, cuts: list[int]) -> tuple[list[Chunk], list[Any]]:
    received: list[Any] = []

    async def send(args: Any, context: Any) -> str:
        received.append(args)
        return "sent"

    tool = create_tool(id="send", description="Send", input_schema={"type": "object"}, execute=send)
    agent = Agent(
        name="mailer",
        model=MockModel([tool_step(raw, cuts), text_step("done")]),
        tools=[tool],
        output_processors=[guard],
        run_log=None,
    )
    output = await agent.stream("mail jane")
    return [c async for c in output.full_stream], received


def joined_deltas(chunks: list[Chunk]) -> str:
    return "".join(c.payload.args_text_delta for c in chunks if c.type == "tool-call-delta")


def shown_texts(value: Any) -> list[str]:
    """Every text a decoded value shows, numbers also written out in full."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        texts = [str(value), repr(value)]
        if isinstance(value, float) and value.is_integer():
            texts.append(str(int(value)))
        return texts
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (k, *shown_texts(v))]
    if isinstance(value, list):
        return [t for item in value for t in shown_texts(item)]
    return [str(value)]


def client_views(chunks: list[Chunk]) -> str:
    """What a client can read of the streamed arguments: the joined text raw, with its escapes
    read, and (when it parses) every text of the decoded value."""
    joined = joined_deltas(chunks)
    views = [joined, lenient_text(joined)]
    try:
        views.extend(shown_texts(json.loads(joined)))
    except ValueError:
        pass
    return "\n".join(views)


def digits(text: str) -> str:
    return re.sub(r"\D", "", text)


# ---------------------------------------------------------------------- the reported cases

REPORTED = {
    "escaped at": '{"to": "jane.doe\\u0040example.com"}',
    "escaped dot": '{"to": "jane.doe@example\\u002ecom"}',
    "fully escaped": '{"to": "' + "".join(f"\\u{ord(c):04x}" for c in "jane.doe@example.com") + '"}',
    "exponent card": '{"card": 4.111111111111111e15}',
    "escaped spaces": '{"card": "4111\\u00201111\\u00201111\\u00201111"}',
    "escaped ssn": '{"ssn": "078\\u002d05\\u002d1120"}',
    "escaped key": '{"jane.doe\\u0040example.com": "primary"}',
}


async def test_the_reported_encodings_never_reach_the_client_in_three_character_deltas() -> None:
    for name, raw in REPORTED.items():
        cuts = list(range(3, len(raw), 3))
        for label, guard in GUARDS.items():
            chunks, received = await stream(guard, raw, cuts)
            seen = client_views(chunks)
            assert "jane.doe@example.com" not in seen and "jane.doe" not in seen, (name, label, seen)
            assert "4111111111111111" not in digits(seen), (name, label, seen)
            assert "078-05-1120" not in seen and "0780511" not in digits(seen), (name, label, seen)
            if label.endswith("block"):
                assert chunks[-1].type == "tripwire" and received == [], (name, label)
            else:
                call = next(c for c in chunks if c.type == "tool-call")
                assert "jane.doe" not in json.dumps(call.payload.args), (name, label)


async def test_a_malformed_call_is_held_and_judged_whole_at_its_end() -> None:
    for raw in ('{"to": "jane.doe\\u0040example.com", oops: 1}', '{"to": "jane.doe\\x40example.com"}'):
        await _malformed(raw)


async def _malformed(raw: str) -> None:
    for label, guard in GUARDS.items():
        chunks, received = await stream(guard, raw, list(range(2, len(raw), 2)))
        assert "jane.doe@example.com" not in client_views(chunks), label
        if label.endswith("block"):
            assert chunks[-1].type == "tripwire" and received == [], label
        else:  # the unparsed input is shown with its escapes read and redacted
            call = next(c for c in chunks if c.type == "tool-call")
            assert "jane.doe" not in lenient_text(str(call.payload.args)), (label, call.payload.args)


async def test_clean_arguments_stream_unchanged() -> None:
    raw = json.dumps({"to": "the team", "n": [1, 2.5, True, None], "body": 'h\u00e9llo \\ "quoted"'})
    guard = GUARDS["regex-filter-redact"]
    chunks, received = await stream(guard, raw, list(range(4, len(raw), 4)))
    deltas = [c.payload.args_text_delta for c in chunks if c.type == "tool-call-delta"]
    assert len(deltas) > 3 and json.loads("".join(deltas)) == json.loads(raw)
    assert received == [json.loads(raw)]


# ---------------------------------------------------------------------- the property


def luhn_card(rng: random.Random) -> str:
    body = "4" + "".join(str(rng.randrange(10)) for _ in range(14))
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


SSNS = ("078-05-1120", "219-09-9999", "457-55-5462")
WORDS = ("alpha", "bravo", "notes", "team", "hello world", "ok", "status", "x")


def pii_value(rng: random.Random) -> tuple[str, str, Any]:
    """A secret: (kind, its text, how it sits in the arguments)."""
    kind = rng.choice(["email", "card", "ssn"])
    if kind == "email":
        local = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))
        return kind, f"{local}.{rng.choice(['roe', 'doe'])}@example.com", None
    if kind == "card":
        return kind, luhn_card(rng), rng.choice(["string", "int", "exponent"])
    return kind, rng.choice(SSNS), None


def escape_string(text: str, rng: random.Random, mode: str) -> str:
    """`text` as a JSON string: plain, some characters `\\u`-escaped, or all of them."""
    out = []
    for ch in text:
        if mode == "full" or (mode == "partial" and rng.random() < 0.4):
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(json.dumps(ch)[1:-1])
    return '"' + "".join(out) + '"'


def encode_secret(kind: str, text: str, form: Any, rng: random.Random, mode: str) -> str:
    if kind == "card" and form == "int":
        return text
    if kind == "card" and form == "exponent":
        return f"{text[0]}.{text[1:]}e{len(text) - 1}"
    wrapped = rng.choice([text, f"write to {text} today", f"{text}, please"])
    return escape_string(wrapped, rng, mode)


def build_arguments(rng: random.Random, secrets: list[tuple[str, str, Any]], mode: str) -> str:
    """A random JSON object as text, the secrets placed at random depths and keys."""
    slots: list[str] = [encode_secret(k, t, f, rng, mode) for k, t, f in secrets]
    slots.extend(json.dumps(rng.choice(WORDS)) for _ in range(rng.randrange(3)))
    slots.extend(str(rng.randrange(100)) for _ in range(rng.randrange(2)))
    rng.shuffle(slots)

    def container(items: list[str], depth: int) -> str:
        if depth < 2 and len(items) > 1 and rng.random() < 0.5:
            half = rng.randrange(1, len(items))
            items = [container(items[:half], depth + 1), *items[half:]]
        if depth > 0 and rng.random() < 0.5:
            return "[" + ", ".join(items) + "]"
        return "{" + ", ".join(f'"k{i}": {item}' for i, item in enumerate(items)) + "}"

    return container(slots, 0)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(sorted(GUARDS)),
    st.randoms(use_true_random=False),
    st.sampled_from(["plain", "partial", "full"]),
    st.integers(min_value=1, max_value=3),
)
async def test_no_secret_in_any_encoding_reaches_the_client_cut_anywhere(
    label: str, rng: random.Random, mode: str, count: int
) -> None:
    secrets = [pii_value(rng) for _ in range(count)]
    raw = build_arguments(rng, secrets, mode)
    assert json.loads(raw) is not None
    cuts = sorted(rng.sample(range(1, len(raw)), min(len(raw) - 1, rng.randrange(1, 30))))
    chunks, received = await stream(GUARDS[label], raw, cuts)
    seen = client_views(chunks)
    blocking = label.endswith("block")
    for kind, text, _ in secrets:
        if kind == "card":
            assert text not in digits(seen), (label, raw, seen)
            if blocking:  # no piece of it went out before the tripwire
                assert text[:8] not in digits(seen), (label, raw, seen)
        else:
            assert text not in seen, (label, raw, seen)
            if kind == "email":
                assert text.split(".")[0] not in seen, (label, raw, seen)  # no piece of it either
            elif blocking:
                assert text[:6] not in seen, (label, raw, seen)
    if blocking:
        assert chunks[-1].type == "tripwire" and received == [], (label, raw)
