"""The options one call (`generate`, `stream`, ...) takes, checked before anything runs and
turned into the run's `RunOptions`: a bad value fails the call by name, never mid-run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from sluicegate.agent.abort import check_abort_signal
from sluicegate.agent.run import RunOptions, normalize_tool_choice
from sluicegate.agent.structured import check_output_retries, output_schema
from sluicegate.errors import ConfigurationError, SluicegateError
from sluicegate.models.retries import check_max_retries
from sluicegate.models.settings import check_provider_options, normalize_model_settings
from sluicegate.processors.hook_timeout import check_timeout
from sluicegate.processors.option_check import unknown_options


class CallDefaults(Protocol):
    """What a call's options default to: the agent's own settings (`Agent`)."""

    default_max_steps: int
    max_processor_retries: int | None
    processor_timeout: float | None
    max_retries: int
    structured_output: Any
    output_retries: int


CALL_OPTIONS = frozenset(
    {
        "require_tool_approval",
        "output_retries",
        "max_steps",
        "input_processors",
        "output_processors",
        "error_processors",
        "max_processor_retries",
        "prepare_step",
        "request_context",
        "tool_choice",
        "active_tools",
        "memory",
        "model_settings",
        "provider_options",
        "structured_output",
        "instructions",
        "tools",
        "model",
        "processor_timeout",
        "max_retries",
        "abort_signal",
        "max_input_chars",
    }
)
"""The options one call (`generate`, `stream`, ...) takes."""


def check_call_options(agent_name: str, options: dict[str, Any]) -> None:
    """Refuse an option no call takes, naming the closest known one."""
    unknown = [name for name in options if name not in CALL_OPTIONS]
    if unknown:
        raise unknown_options(f"agent {agent_name!r} call", unknown, set(CALL_OPTIONS))


PER_CALL_ONLY = {
    "request_context": "it is the caller's (who calls, for which thread)",
    "abort_signal": "it cancels one call",
    "model": "the agent's own model= is its default",
    "memory": (
        "it names one conversation and its owner; as a default every caller would share it "
        "(a call's thread would merge with the default's resource)"
    ),
}
"""Call options an agent's `default_options` cannot set, with why."""


def checked_default_options(agent: CallDefaults, agent_name: str, defaults: Any) -> dict[str, Any]:
    """An agent's `default_options`: a mapping of call options (Mastra's `defaultOptions`),
    each name and value checked as a call's are (`UnknownOptionError`, `ConfigurationError`)."""
    if defaults is None:
        return {}
    if not isinstance(defaults, Mapping):
        raise ConfigurationError(
            f"default_options must be a mapping of call options, got {type(defaults).__name__}"
        )
    options = dict(defaults)
    unknown = [name for name in options if name not in CALL_OPTIONS]
    if unknown:
        raise unknown_options(f"agent {agent_name!r} default_options", unknown, set(CALL_OPTIONS))
    for name, why in PER_CALL_ONLY.items():
        if name in options:
            raise ConfigurationError(f"default_options cannot set {name!r}: {why}")
    try:
        checked_run_options(agent, options)
    except SluicegateError as exc:
        raise ConfigurationError(f"default_options: {exc}") from None
    return options


def with_defaults(defaults: Mapping[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """A call's options over the agent's defaults: the call's value wins (None too: a call
    given `prepare_step=None` runs without the default's), and a dict merges into the
    default's key by key (as Mastra's deep merge)."""
    if not defaults:
        return options
    merged = dict(defaults)
    for name, value in options.items():
        merged[name] = _merged(merged.get(name), value)
    return merged


def _merged(default: Any, value: Any) -> Any:
    if type(default) is dict and type(value) is dict:
        out = dict(default)
        for key, item in value.items():
            out[key] = _merged(out.get(key), item)
        return out
    return value


def checked_run_options(agent: CallDefaults, options: dict[str, Any]) -> tuple[RunOptions, Any]:
    """The run's options (the call's, else the agent's) and its `prepare_step`, each checked."""
    max_steps = options.get("max_steps", agent.default_max_steps)
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise SluicegateError(f"max_steps must be a positive integer, got {max_steps!r}")
    retries = options.get("max_processor_retries", agent.max_processor_retries)
    check_retries(retries)
    tool_choice = options.get("tool_choice")
    normalize_tool_choice(tool_choice)  # fail early on a bad value
    abort_signal = options.get("abort_signal")
    check_abort_signal(abort_signal)
    prepare_step = checked_prepare_step(options.get("prepare_step"))
    if options.get("structured_output") is not None:
        output_schema(options["structured_output"])  # fail early on a bad value
    model_settings = normalize_model_settings(options.get("model_settings"))
    check_provider_options(options.get("provider_options"))
    run_options = RunOptions(
        max_steps=max_steps,
        max_processor_retries=retries,
        tool_choice=tool_choice,
        active_tools=options.get("active_tools"),
        model_settings=model_settings or None,
        provider_options=options.get("provider_options"),
        processor_timeout=check_timeout(
            "processor_timeout", options.get("processor_timeout", agent.processor_timeout)
        ),
        max_retries=check_max_retries(options.get("max_retries", agent.max_retries)),
        abort_signal=abort_signal,
        structured_output=options.get("structured_output", agent.structured_output),
        output_retries=check_output_retries(options.get("output_retries", agent.output_retries)),
    )
    return run_options, prepare_step


def checked_prepare_step(prepare_step: Any) -> Any:
    if prepare_step is not None and not callable(prepare_step):
        raise ConfigurationError(
            f"prepare_step must be a function (def or async def), got {type(prepare_step).__name__}"
        )
    return prepare_step


def check_retries(value: Any) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise ConfigurationError(
            f"max_processor_retries must be a non-negative integer or None, got {value!r}"
        )
