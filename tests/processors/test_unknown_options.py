"""Every built-in processor refuses an option it does not take with a `ConfigurationError`
naming the option and the closest valid one, through one mechanism (`Processor.__new__`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import pytest

import sluicegate.processors as processors
from sluicegate.errors import ConfigurationError, UnknownOptionError
from sluicegate.processors import Processor
from sluicegate.processors.option_check import known_options

BUILTINS = sorted(
    {
        name: cls
        for name in processors._BUILTINS
        if isinstance(cls := getattr(processors, name), type) and issubclass(cls, Processor)
    }.items()
)


def test_every_builtin_processor_is_covered() -> None:
    assert len(BUILTINS) >= 25
    assert {"RegexFilter", "PIIDetector", "TokenLimiter", "ModelRouterProcessor"} <= dict(BUILTINS).keys()


@pytest.mark.parametrize(("name", "cls"), BUILTINS, ids=[name for name, _ in BUILTINS])
def test_a_misspelled_option_names_the_closest_valid_one(name: str, cls: type) -> None:
    options = known_options(cls)
    assert options is not None, f"{name} takes **kwargs, so a typo would pass silently"
    longest = max(options, key=len, default=None)
    if longest is None or len(longest) < 4:
        with pytest.raises(UnknownOptionError, match=rf"{cls.__name__}: unknown option 'bogus'"):
            cls(bogus=1)
        return
    typo = longest[:2] + longest[3:]  # one letter dropped
    with pytest.raises(ConfigurationError, match=rf"unknown option '{typo}' \(did you mean '{longest}'\?\)"):
        cls(**{typo: 1})


def test_the_error_is_a_type_error_too_and_lists_the_options() -> None:
    with pytest.raises(TypeError) as caught:
        processors.RegexFilter(presets=["pii"], stratgy="block")
    message = str(caught.value)
    assert message.startswith("RegexFilter: unknown option 'stratgy' (did you mean 'strategy'?)")
    assert "presets" in message and "stream_carryover_size" in message
    assert "__init__" not in message


def test_every_unknown_option_is_named_and_far_ones_get_no_guess() -> None:
    with pytest.raises(
        UnknownOptionError, match=r"unknown options 'xyzzy', 'stratgy' \(did you mean 'strategy'\?\); its"
    ):
        processors.TokenLimiter(10, xyzzy=1, stratgy="abort")


def test_valid_options_positional_and_keyword_still_work() -> None:
    limiter = processors.TokenLimiter(10, strategy="abort")
    assert (limiter.limit, limiter.strategy) == (10, "abort")


def test_user_processors_get_the_same_check() -> None:
    class Shout(Processor):
        id = "shout"

        def __init__(self, *, volume: int = 1) -> None:
            self.volume = volume

    @dataclass
    class Tagged(Processor):
        tag: str = "x"
        id: str = "tagged"

    assert Shout(volume=3).volume == 3
    with pytest.raises(UnknownOptionError, match="did you mean 'volume'"):
        Shout(volme=3)
    assert Tagged(tag="y").tag == "y"
    with pytest.raises(UnknownOptionError, match="did you mean 'tag'"):
        Tagged(tga="y")


def test_a_processor_taking_kwargs_is_left_to_itself() -> None:
    class Loose(Processor):
        id = "loose"

        def __init__(self, **options: Any) -> None:
            self.options = options

    assert Loose(anything=1).options == {"anything": 1}


def test_no_builtin_constructor_swallows_keywords() -> None:
    for name, cls in BUILTINS:
        kinds = {p.kind for p in inspect.signature(cls.__init__).parameters.values()}
        assert inspect.Parameter.VAR_KEYWORD not in kinds, name


async def test_a_misspelled_call_option_names_the_closest_one_too() -> None:
    from sluicegate import Agent
    from sluicegate.testing import MockModel

    model = MockModel()
    with pytest.raises(
        UnknownOptionError, match=r"agent 'a' call: unknown option 'max_step' \(did you mean 'max_steps'\?\)"
    ):
        await Agent("a", model=model).generate("hi", max_step=2)
    assert model.calls == []
