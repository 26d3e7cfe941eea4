"""Misuse is diagnosed where it is made, with a `ConfigurationError` that says what to write."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluicegate import Agent
from sluicegate.errors import ConfigurationError
from sluicegate.processors import Processor
from sluicegate.processors.base import HOOKS
from sluicegate.processors.validation import CAMEL_HOOKS, STEP_RESULT_KEYS, check_step_result_keys
from sluicegate.testing import MockModel, text_step


def _model() -> MockModel:
    return MockModel([text_step("ok")])


class CamelCase(Processor):
    id = "camel"

    def processInput(self, args):
        return args.messages


@pytest.mark.parametrize("array", ["input_processors", "output_processors", "error_processors"])
def test_camel_case_hooks_are_rejected_when_the_agent_is_built(array: str):
    with pytest.raises(ConfigurationError, match=r"'processInput'.*'process_input'"):
        Agent("a", model=_model(), **{array: [CamelCase()]})


async def test_camel_case_hooks_are_rejected_in_per_call_arrays():
    with pytest.raises(ConfigurationError, match="processInput"):
        await Agent("a", model=_model()).generate("hi", output_processors=[CamelCase()])


@pytest.mark.parametrize("camel", sorted(CAMEL_HOOKS))
def test_every_mastra_spelling_is_recognised(camel: str):
    processor = type("P", (Processor,), {"id": "p", camel: lambda self, args: None})()
    with pytest.raises(ConfigurationError, match=CAMEL_HOOKS[camel]):
        Agent("a", model=_model(), output_processors=[processor])


def test_mastra_data_parts_flag_is_rejected():
    processor = type("P", (Processor,), {"id": "p", "processDataParts": True})()
    with pytest.raises(ConfigurationError, match="process_data_parts"):
        Agent("a", model=_model(), output_processors=[processor])


def test_a_hook_that_is_not_callable_is_rejected():
    processor = type("P", (Processor,), {"id": "p", "process_input": "strip"})()
    with pytest.raises(ConfigurationError, match=r"process_input.*not callable"):
        Agent("a", model=_model(), input_processors=[processor])


def test_snake_case_processors_and_helpers_named_process_are_fine():
    class Fine(Processor):
        id = "fine"
        process_data_parts = True

        def process_output_stream(self, args):
            return args.part

        def processed_count(self) -> int:
            return 0

    Agent("a", model=_model(), output_processors=[Fine()])


async def test_unknown_keys_in_a_step_result_are_rejected_with_a_suggestion():
    class Typo(Processor):
        id = "typo"

        def process_input_step(self, args):
            return {"modle": "openai/gpt-5"}

    model = _model()
    with pytest.raises(ConfigurationError, match=r"'modle' \(did you mean 'model'\?\)"):
        await Agent("a", model=model, input_processors=[Typo()]).generate("hi")
    assert model.calls == []


async def test_unknown_keys_from_prepare_step_are_rejected():
    model = _model()
    with pytest.raises(ConfigurationError, match="toolchoice"):
        await Agent("a", model=model).generate("hi", prepare_step=lambda args: {"toolchoice": "none"})
    assert model.calls == []


async def test_camel_case_step_result_keys_are_still_accepted():
    model = _model()
    result = await Agent("a", model=model).generate("hi", prepare_step=lambda args: {"toolChoice": "none"})
    assert result.text == "ok"


@given(st.text(min_size=1, max_size=20))
def test_any_unknown_key_is_rejected_and_known_keys_pass(key: str):
    if key in STEP_RESULT_KEYS or key in (
        "toolChoice",
        "activeTools",
        "messageList",
        "systemMessages",
        "providerOptions",
        "modelSettings",
        "structuredOutput",
    ):
        check_step_result_keys({key: None}, "p", "process_input_step")
    else:
        with pytest.raises(ConfigurationError):
            check_step_result_keys({key: None}, "p", "process_input_step")


async def test_a_prepare_step_that_is_not_callable_is_rejected_before_the_run():
    model = _model()
    with pytest.raises(ConfigurationError, match="prepare_step must be a function"):
        await Agent("a", model=model).generate("hi", prepare_step={"tool_choice": "none"})
    assert model.calls == []


@pytest.mark.parametrize("returned", [None.__class__, "processor", {"a": 1}])
async def test_a_callable_array_must_return_a_list(returned):
    class One(Processor):
        id = "one"

        def process_input(self, args):
            return None

    value = One() if returned is None.__class__ else returned
    model = _model()
    agent = Agent("a", model=model, input_processors=lambda ctx: value)
    with pytest.raises(
        ConfigurationError, match=r"input_processors \(returned by the callable\) must be a list"
    ):
        await agent.generate("hi")
    assert model.calls == []


async def test_a_callable_array_returning_camel_case_processors_is_rejected():
    agent = Agent("a", model=_model(), input_processors=lambda ctx: [CamelCase()])
    with pytest.raises(ConfigurationError, match="processInput"):
        await agent.generate("hi")


def test_hooks_list_includes_the_tool_result_hook():
    assert "process_tool_result" in HOOKS


def test_hooks_set_on_the_instance_are_checked_too():
    processor = Processor()
    processor.id = "inst"
    processor.processOutputResult = lambda args: None  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="process_output_result"):
        Agent("a", model=_model(), output_processors=[processor])
    fine = Processor()
    fine.id = "fine"
    fine.process_output_result = lambda args: None  # type: ignore[method-assign]
    Agent("a", model=_model(), output_processors=[fine])


# ---------------------------------------------------------------- classes and non-processors


@pytest.mark.parametrize("array", ["input_processors", "output_processors", "error_processors"])
def test_a_processor_class_is_rejected_when_the_agent_is_built(array: str):
    from sluicegate.processors import RegexFilter, UnicodeNormalizer

    with pytest.raises(
        ConfigurationError,
        match=rf"{array}\[1\] is the class RegexFilter, .*pass RegexFilter\(\.\.\.\), an instance",
    ):
        Agent("a", model=_model(), **{array: [UnicodeNormalizer(), RegexFilter]})


def test_a_bare_class_as_the_whole_array_is_rejected():
    from sluicegate.processors import UnicodeNormalizer

    with pytest.raises(
        ConfigurationError,
        match=r"input_processors is the class UnicodeNormalizer.*\[UnicodeNormalizer\(\.\.\.\)\]",
    ):
        Agent("a", model=_model(), input_processors=UnicodeNormalizer)


async def test_a_processor_class_in_a_per_call_array_is_rejected_before_the_model_is_called():
    from sluicegate.processors import UnicodeNormalizer

    model = _model()
    with pytest.raises(ConfigurationError, match=r"output_processors\[0\] is the class"):
        await Agent("a", model=model).generate("hi", output_processors=[UnicodeNormalizer])
    assert model.calls == []


@pytest.mark.parametrize("thing", [object(), "regex-filter", 42, lambda args: None])
def test_an_object_without_any_hook_is_rejected(thing: object):
    with pytest.raises(
        ConfigurationError, match=r"input_processors\[0\] .*is not a processor: it has none of the hooks"
    ):
        Agent("a", model=_model(), input_processors=[thing])


def test_a_duck_typed_processor_with_a_hook_is_still_accepted():
    class Duck:
        id = "duck"

        def process_input(self, args):
            return None

    Agent("a", model=_model(), input_processors=[Duck()])


def test_classes_are_rejected_by_create_step_and_the_registry_too():
    from sluicegate import Sluicegate
    from sluicegate.processors import UnicodeNormalizer
    from sluicegate.workflows import create_step

    with pytest.raises(ConfigurationError, match="is the class UnicodeNormalizer"):
        create_step(UnicodeNormalizer)
    with pytest.raises(ConfigurationError, match=r"processors\[0\] is the class UnicodeNormalizer"):
        Sluicegate(processors=[UnicodeNormalizer])
    with pytest.raises(ConfigurationError, match=r"processors\['norm'\] is the class"):
        Sluicegate(processors={"norm": UnicodeNormalizer})
