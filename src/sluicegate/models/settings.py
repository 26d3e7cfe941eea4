"""Model settings in one canonical spelling, so every reader sees the value the provider gets.

Settings arrive as snake_case, camelCase or OpenAI's `max_tokens`. If two spellings of one
setting could both reach the call, a budget check that read one while the provider received the
other would price a different call than the one made. Settings are therefore normalised once,
to `CallOptions`' attribute names, before any processor or provider reads them: an unknown key,
a second spelling of a setting (even with the same value) or a value of the wrong type is a
`ConfigurationError` naming the keys.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sluicegate.errors import ConfigurationError

ALIASES: dict[str, str] = {
    "temperature": "temperature",
    "max_output_tokens": "max_output_tokens",
    "maxOutputTokens": "max_output_tokens",
    "max_tokens": "max_output_tokens",
    "top_p": "top_p",
    "topP": "top_p",
    "top_k": "top_k",
    "topK": "top_k",
    "stop_sequences": "stop_sequences",
    "stopSequences": "stop_sequences",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "presencePenalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "frequencyPenalty": "frequency_penalty",
}
"""Every accepted spelling -> its canonical (`CallOptions` attribute) name."""

OUTPUT_LIMIT_KEYS = frozenset(
    {
        "max_output_tokens",
        "maxOutputTokens",
        "max_tokens",
        "maxTokens",
        "max_completion_tokens",
        "maxCompletionTokens",
    }
)
"""Spellings of the output limit refused inside `provider_options`: the limit is a model
setting, priced by the cost guard, and a provider-specific copy would override it unseen."""

_INTEGERS = frozenset({"max_output_tokens", "top_k", "seed"})
_POSITIVE = frozenset({"max_output_tokens"})


class ModelSettingsError(ConfigurationError):
    """Model settings that cannot be sent as given: `field` is where (`model_settings.max_tokens`),
    `reason` what is wrong."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def normalize_model_settings(
    settings: Mapping[str, Any] | None, *, where: str = "model_settings"
) -> dict[str, Any]:
    """`settings` with every key in its canonical spelling; `None` values are dropped.
    `where` names the settings in errors (an option, an HTTP field, a processor's result)."""
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise ModelSettingsError(where, f"must be a dict, got {type(settings).__name__}")
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in settings.items():
        name = ALIASES.get(key) if isinstance(key, str) else None
        if name is None:
            raise ModelSettingsError(f"{where}.{key}", f"unknown model setting; known: {sorted(ALIASES)}")
        if name in spelled:
            raise ModelSettingsError(
                f"{where}.{key}", f"{spelled[name]!r} and {key!r} both set {name}; give it once"
            )
        spelled[name] = key
        if value is not None:
            out[name] = _checked(name, value, f"{where}.{key}")
    return out


def _checked(name: str, value: Any, field: str) -> Any:
    if name == "stop_sequences":
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise ModelSettingsError(field, "must be a list of strings")
        return list(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelSettingsError(field, f"must be a number, got {type(value).__name__}")
    if name in _INTEGERS and not isinstance(value, int):
        raise ModelSettingsError(field, f"must be an integer, got {value!r}")
    if not math.isfinite(value):
        raise ModelSettingsError(field, f"must be finite, got {value!r}")
    if name in _POSITIVE and value < 1:
        raise ModelSettingsError(field, f"must be at least 1, got {value!r}")
    return value


def check_provider_options(options: Mapping[str, Any] | None, *, where: str = "provider_options") -> None:
    """Refuse an output limit inside `provider_options` (see `OUTPUT_LIMIT_KEYS`)."""
    for provider, scoped in (options or {}).items():
        if not isinstance(scoped, Mapping):
            continue
        for key in scoped:
            if key in OUTPUT_LIMIT_KEYS:
                raise ModelSettingsError(
                    f"{where}.{provider}.{key}",
                    "set the output limit as model_settings.max_output_tokens, which the cost guard prices",
                )
