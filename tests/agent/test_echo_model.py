"""`EchoModel` answers with the text exactly, in the number of pieces asked for when it can."""

from __future__ import annotations

import pytest

from sluicegate import Agent
from sluicegate.testing.echo_model import EchoModel


@pytest.mark.parametrize(
    ("text", "deltas"), [("hi", 8), ("hi", 1), ("a b c d e f g h i j", 3), ("", 4), ("ok", 50)]
)
def test_pieces_join_to_the_echo_exactly(text: str, deltas: int) -> None:
    pieces = EchoModel(deltas=deltas).pieces(text)
    assert "".join(pieces) == f"Echo: {text}"
    assert "…" not in "".join(pieces)
    assert len(pieces) == min(deltas, max(len(f"Echo: {text}".split(" ")), len(f"Echo: {text}")))


async def test_a_short_answer_is_not_padded() -> None:
    result = await Agent("a", model=EchoModel(deltas=8)).generate("hi")
    assert result.text == "Echo: hi"
