from __future__ import annotations

from sluicegate import Agent
from sluicegate.processors import UnicodeNormalizer
from sluicegate.testing import MockModel, text_step


async def run(processor: UnicodeNormalizer, text: str) -> str:
    model = MockModel([text_step("ok")])
    agent = Agent(name="n", model=model, input_processors=[processor])
    await agent.generate(text)
    prompt = model.calls[0].prompt
    return next(p["text"] for m in prompt if m["role"] == "user" for p in m["content"] if p["type"] == "text")


async def test_nfkc_collapse_and_trim_by_default() -> None:
    assert (
        await run(UnicodeNormalizer(), "  ｈｅｌｌｏ   there\r\n\r\nﬁne\t\tday  ") == "hello there\nfine day"
    )


async def test_strip_control_chars() -> None:
    # NUL never reaches a processor: the agent refuses it up front (InvalidInputError).
    assert await run(UnicodeNormalizer(strip_control_chars=True), "a\x01b\x1bc\x7fd") == "abcd"
    assert await run(UnicodeNormalizer(), "a\x01b") == "a\x01b"


async def test_preserve_emojis() -> None:
    assert await run(UnicodeNormalizer(strip_control_chars=True), "hi 😀\x01") == "hi 😀"
    assert (
        await run(UnicodeNormalizer(strip_control_chars=True, preserve_emojis=False), "hi 😀\x01!") == "hi !"
    )


async def test_collapse_whitespace_off_keeps_runs() -> None:
    assert await run(UnicodeNormalizer(collapse_whitespace=False), "a   b\n\n\nc") == "a   b\n\n\nc"


async def test_trim_off_keeps_edges() -> None:
    assert await run(UnicodeNormalizer(trim=False), "  a  ") == " a "


async def test_legacy_content_string_is_normalized_too() -> None:
    processor = UnicodeNormalizer()
    assert processor.normalize("Ⅻ  x ") == "XII x"
