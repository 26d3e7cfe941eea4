"""The built-in model strings: registers every provider `resolve_model` knows.

- `openai/<model>` -> `OpenAIResponsesModel` (the Responses API, OpenAI's recommended API and
  the AI SDK's default for `openai(...)`); `openai.chat/<model>` -> Chat Completions.
- `anthropic/<model>` -> `AnthropicMessagesModel`.
- `google/<model>` -> `GeminiModel` (the `google-genai` SDK, `gemini` extra).
- every name in `COMPATIBLE_PROVIDERS` (`openrouter`, `groq`, `cerebras`, `ollama`, ...) ->
  `OpenAICompatible` with that provider's base URL and key variable.
- `local/smollm2-135m` -> the embedded offline model.

Keys are read from the environment when the model is built; a missing key raises
`MissingAPIKeyError` naming the variable. Adapter modules are imported on first use, so
`import sluicegate` does not pay for the SDKs.
"""

from __future__ import annotations

from collections.abc import Callable

from sluicegate.models.base import LanguageModel
from sluicegate.models.registry import register_provider


def _openai(model_id: str) -> LanguageModel:
    from sluicegate.models.openai_responses import OpenAIResponsesModel

    model = OpenAIResponsesModel(model_id)
    model.client()  # read the key now, so a missing key fails where the model is chosen
    return model


def _openai_chat(model_id: str) -> LanguageModel:
    from sluicegate.models.openai_chat import OpenAIChatModel

    model = OpenAIChatModel(model_id)
    model.client()
    return model


def _anthropic(model_id: str) -> LanguageModel:
    from sluicegate.models.anthropic_messages import AnthropicMessagesModel

    model = AnthropicMessagesModel(model_id)
    model.client()
    return model


def _google(model_id: str) -> LanguageModel:
    from sluicegate.models.google_gemini import GeminiModel

    model = GeminiModel(model_id)
    model.client()
    return model


def _compatible(name: str) -> Callable[[str], LanguageModel]:
    def factory(model_id: str) -> LanguageModel:
        from sluicegate.models.openai_compatible import OpenAICompatible

        return OpenAICompatible.for_provider(name, model_id)

    return factory


def _local(model_id: str) -> LanguageModel:
    from sluicegate.models.local import LocalModel

    return LocalModel(model_id)


def register_builtin_providers() -> None:
    from sluicegate.models.compatible_providers import COMPATIBLE_PROVIDERS

    register_provider("openai", _openai)
    register_provider("openai.chat", _openai_chat)
    register_provider("anthropic", _anthropic)
    register_provider("google", _google)
    for name in COMPATIBLE_PROVIDERS:
        register_provider(name, _compatible(name))
    register_provider("local", _local)


register_builtin_providers()
