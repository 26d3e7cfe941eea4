"""Language models: the V2 protocol, model strings and the provider adapters."""

from sluicegate.models.base import CallOptions, GenerateResult, LanguageModel, StreamPart, StreamResult
from sluicegate.models.openai_compatible import OpenAICompatible
from sluicegate.models.registry import known_providers, register_provider, resolve_model

__all__ = [
    "CallOptions",
    "GenerateResult",
    "LanguageModel",
    "OpenAICompatible",
    "StreamPart",
    "StreamResult",
    "known_providers",
    "register_provider",
    "resolve_model",
]

from sluicegate.models import providers as _providers  # noqa: F401  (registers the model strings)
