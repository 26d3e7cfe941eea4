"""Model settings reach processors and providers in one canonical spelling; anything else is a
`ConfigurationError` naming the key."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import ConfigurationError
from sluicegate.models.settings import ModelSettingsError, check_provider_options, normalize_model_settings
from sluicegate.testing import MockModel, text_step


def test_every_spelling_becomes_the_call_option_name() -> None:
    settings = {"maxOutputTokens": 7, "topP": 0.5, "topK": 3, "stopSequences": ["x"], "temperature": 0}
    assert normalize_model_settings(settings) == {
        "max_output_tokens": 7,
        "top_p": 0.5,
        "top_k": 3,
        "stop_sequences": ["x"],
        "temperature": 0,
    }
    assert normalize_model_settings({"max_tokens": 7, "seed": None}) == {"max_output_tokens": 7}
    assert normalize_model_settings(None) == {}


@pytest.mark.parametrize(
    "settings",
    [
        {"maxOutputTokens": 1, "max_tokens": 5},
        {"max_tokens": 5, "max_output_tokens": 5},
        {"topP": 1, "top_p": None},
    ],
)
def test_two_spellings_of_one_setting_are_refused_even_when_equal(settings: dict[str, Any]) -> None:
    with pytest.raises(ModelSettingsError, match="both set") as caught:
        normalize_model_settings(settings, where="modelSettings")
    assert caught.value.field == f"modelSettings.{list(settings)[1]}"


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        ({"maxTokens": 5}, "unknown model setting"),
        ({"max_tokens": 0}, "at least 1"),
        ({"max_tokens": 2.5}, "integer"),
        ({"max_tokens": True}, "number"),
        ({"temperature": float("nan")}, "finite"),
        ({"stop_sequences": "x"}, "list of strings"),
    ],
)
def test_a_setting_that_cannot_be_sent_as_given_is_refused(settings: dict[str, Any], reason: str) -> None:
    with pytest.raises(ModelSettingsError, match=reason) as caught:
        normalize_model_settings(settings)
    assert caught.value.field == f"model_settings.{next(iter(settings))}"


def test_an_output_limit_inside_provider_options_is_refused() -> None:
    check_provider_options({"openai": {"reasoningEffort": "low"}, "anthropic": "not a dict"})
    for key in ("maxCompletionTokens", "max_tokens", "maxOutputTokens"):
        with pytest.raises(ModelSettingsError, match=r"model_settings\.max_output_tokens"):
            check_provider_options({"openai": {key: 10}})


async def test_the_provider_and_every_processor_see_the_canonical_settings() -> None:
    seen: list[Any] = []

    class Look:
        id = "look"

        def process_input_step(self, args: Any) -> None:
            seen.append(dict(args.model_settings))

    model = MockModel([text_step("ok")])
    agent = Agent(name="a", model=model, input_processors=[Look()])
    await agent.generate("hi", model_settings={"maxOutputTokens": 7, "topP": 0.5})
    assert seen == [{"max_output_tokens": 7, "top_p": 0.5}]
    assert model.calls[0].max_output_tokens == 7 and model.calls[0].top_p == 0.5


async def test_conflicting_settings_from_a_processor_name_the_processor() -> None:
    class Bad:
        id = "bad-settings"

        def process_input_step(self, args: Any) -> dict[str, Any]:
            return {"model_settings": {"max_tokens": 9, "maxOutputTokens": 9}}

    model = MockModel([text_step("ok")])
    with pytest.raises(ConfigurationError, match=r"model_settings from 'bad-settings'\.maxOutputTokens"):
        await Agent(name="a", model=model, input_processors=[Bad()]).generate("hi")
    assert model.calls == []


async def test_an_unknown_setting_fails_before_anything_runs() -> None:
    model = MockModel([text_step("ok")])
    with pytest.raises(ConfigurationError, match="unknown model setting"):
        await Agent(name="a", model=model).generate("hi", model_settings={"max_token": 5})
    assert model.calls == []
