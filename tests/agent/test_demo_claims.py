"""The demo's numbers agree with what it says: the token-limit scene names both counts (the
limiter's, which cut the text, and the model's own, capped at the limit plus the margin)."""

from __future__ import annotations

import pytest

from sluicegate.demo import capped_story
from sluicegate.processors import TokenLimiter
from sluicegate.testing import MockModel, text_step

STORY = " ".join(f"word{i}" for i in range(200))


async def test_the_token_limit_scene_says_what_each_number_counts(capsys: pytest.CaptureFixture[str]) -> None:
    model = MockModel([text_step(STORY, pieces=100)])
    await capped_story(model, {"max_output_tokens": 60, "temperature": 0})
    out = capsys.readouterr().out
    assert "cut the answer at 20 tokens" in out
    shown = out.split("agent: ", 1)[1].split("\n", 1)[0]
    limiter = TokenLimiter(20)
    assert 15 <= limiter.counter().text(shown.strip()) <= 20  # cut where it says
    margin = limiter.output_token_margin
    assert model.calls[0].max_output_tokens == 20 + margin  # what the model was allowed ...
    assert "the limiter cut the text at 20 tokens" in out
    assert f"it may write {20 + margin} (20 + output_token_margin {margin})" in out  # ... is what it says


async def test_a_short_answer_is_not_called_cut(capsys: pytest.CaptureFixture[str]) -> None:
    await capped_story(MockModel([text_step("Once, a keeper.")]), {"max_output_tokens": 60})
    out = capsys.readouterr().out
    assert "the model stopped before the limiter's 20 tokens" in out and "cut the text" not in out


async def test_the_input_scene_says_which_processor_changed_what(capsys: pytest.CaptureFixture[str]) -> None:
    from sluicegate.demo import guarded_input

    await guarded_input(MockModel([text_step("Got them.")]), {"max_output_tokens": 60})
    out = capsys.readouterr().out
    normalized = next(line for line in out.splitlines() if "unicode-normalizer changed" in line)
    assert "'Ｈｉ!   My" in normalized and "-> 'Hi! My" in normalized
    redacted = next(line for line in out.splitlines() if "regex-filter changed" in line)
    assert "jane.doe@example.com" in redacted.split("->")[0] and "[EMAIL]" in redacted.split("->")[1]
    assert "4111 1111 1111 1111" not in redacted.split("->")[1]
    assert "[data-stats] {'deltas'" in out and "the live-stats processor wrote into the stream" in out


async def test_the_output_scene_says_what_the_output_guardrail_redacted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    await capped_story(MockModel([text_step("Write to keeper@example.com soon.")]), {"max_output_tokens": 60})
    out = capsys.readouterr().out
    assert "keeper@example.com" not in out.split("agent: ", 1)[1].split("\n", 1)[0]  # not shown
    changed = next(line for line in out.splitlines() if "regex-filter changed the answer" in line)
    assert "'Write to keeper@example.com soon.' -> 'Write to [EMAIL] soon.'" in changed
    await capped_story(MockModel([text_step("Once, a keeper.")]), {"max_output_tokens": 60})
    assert "regex-filter: found no personal data in the answer" in capsys.readouterr().out
