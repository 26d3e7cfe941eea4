"""The named OpenAI-compatible providers that model strings such as
`"groq/llama-3.3-70b-versatile"` resolve to (used by `sluicegate.models.openai_compatible`).

A module of its own so that registering the model strings at `import sluicegate` does not load
the Chat Completions adapter: that happens when such a model is first resolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sluicegate.models.structured_outputs import StructuredOutputs


@dataclass(frozen=True)
class CompatibleProvider:
    """A named OpenAI-compatible endpoint."""

    name: str
    base_url: str
    api_key_env: str | None
    """The environment variable holding the key; `None` for local servers that need none."""
    base_url_env: str | None = None
    """An environment variable that overrides `base_url` (for self-hosted servers)."""
    structured_outputs: StructuredOutputs = "json_schema"
    """How the server is asked for JSON first (it falls back on rejection)."""


COMPATIBLE_PROVIDERS: dict[str, CompatibleProvider] = {
    p.name: p
    for p in (
        CompatibleProvider("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        CompatibleProvider("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        CompatibleProvider("cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
        CompatibleProvider("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
        CompatibleProvider("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        CompatibleProvider("fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
        CompatibleProvider("xai", "https://api.x.ai/v1", "XAI_API_KEY"),
        CompatibleProvider("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
        CompatibleProvider("perplexity", "https://api.perplexity.ai", "PERPLEXITY_API_KEY"),
        CompatibleProvider("deepinfra", "https://api.deepinfra.com/v1/openai", "DEEPINFRA_API_KEY"),
        CompatibleProvider("ollama", "http://127.0.0.1:11434/v1", None, "OLLAMA_BASE_URL"),
        CompatibleProvider("lmstudio", "http://127.0.0.1:1234/v1", None, "LMSTUDIO_BASE_URL"),
        CompatibleProvider("vllm", "http://127.0.0.1:8000/v1", None, "VLLM_BASE_URL"),
        CompatibleProvider("llamacpp", "http://127.0.0.1:8080/v1", None, "LLAMACPP_BASE_URL"),
    )
}
