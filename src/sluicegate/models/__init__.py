"""Language models: the V2 protocol, model strings and the provider adapters."""

from typing import TYPE_CHECKING

from sluicegate._lazy import lazy_attributes
from sluicegate.models.base import CallOptions, GenerateResult, LanguageModel, StreamPart, StreamResult
from sluicegate.models.circuit_breaker import CircuitBreaker
from sluicegate.models.registry import known_providers, register_provider, resolve_model

if TYPE_CHECKING:
    from sluicegate.models.openai_compatible import OpenAICompatible
    from sluicegate.models.redis_circuit_breaker import RedisCircuitBreaker

# Adapters are imported on first use: an agent on another model does not load them.
__getattr__ = lazy_attributes(
    __name__, {"OpenAICompatible": "openai_compatible", "RedisCircuitBreaker": "redis_circuit_breaker"}
)

__all__ = [
    "CallOptions",
    "CircuitBreaker",
    "GenerateResult",
    "LanguageModel",
    "OpenAICompatible",
    "RedisCircuitBreaker",
    "StreamPart",
    "StreamResult",
    "known_providers",
    "register_provider",
    "resolve_model",
]

from sluicegate.models import providers as _providers  # noqa: F401  (registers the model strings)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
