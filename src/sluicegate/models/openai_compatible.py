"""OpenAI-compatible servers (OpenRouter, Groq, Cerebras, Ollama, vLLM, llama.cpp, ...).

`OpenAICompatible(model_id, base_url=..., api_key=None)` speaks Chat Completions to any server
that implements it. `COMPATIBLE_PROVIDERS` lists the named providers that model strings such as
`"groq/llama-3.3-70b-versatile"` resolve to: each has a base URL and the environment variable its
key is read from (local servers need none), and how the server is asked for JSON
(`structured_outputs`, see `sluicegate.models.structured_outputs`).
"""

from __future__ import annotations

import os
from typing import Any

from sluicegate.errors import MissingAPIKeyError
from sluicegate.models._response_checks import DEFAULT_REQUEST_TIMEOUT, DEFAULT_STREAM_IDLE_TIMEOUT
from sluicegate.models.base import CallOptions, GenerateResult, StreamResult
from sluicegate.models.compatible_providers import COMPATIBLE_PROVIDERS
from sluicegate.models.openai_chat import OpenAIChatModel
from sluicegate.models.structured_outputs import (
    StructuredOutputs,
    apply_mode,
    check_mode,
    next_mode,
    rejects_response_format,
)


class OpenAICompatible(OpenAIChatModel):
    """A model on any server speaking OpenAI Chat Completions.

    ```python
    from sluicegate import Agent
    from sluicegate.models import OpenAICompatible

    model = OpenAICompatible("qwen2.5:7b", base_url="http://127.0.0.1:11434/v1")
    agent = Agent(name="local", instructions="Be brief.", model=model)
    ```

    Assistant reasoning is sent back as `reasoning_content`, and `provider_options[name]` entries
    are merged into the request body as given (`reasoningEffort` becomes `reasoning_effort`).

    `structured_outputs` (`"json_schema"`, `"json_object"` or `"prompt"`) says how a JSON
    `response_format` is sent. When the server rejects it, the call is retried once with the next
    mode (`json_schema` -> `json_object` -> `prompt`), and the mode that worked is kept for later
    calls (`model.structured_outputs`).
    """

    max_tokens_field = "max_tokens"

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str,
        api_key: str | None = None,
        name: str = "openai-compatible",
        headers: dict[str, str] | None = None,
        client: Any = None,
        max_retries: int = 0,
        timeout: float | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT,
        structured_outputs: StructuredOutputs = "json_schema",
    ) -> None:
        self.structured_outputs: StructuredOutputs = check_mode(structured_outputs)
        super().__init__(
            model_id,
            api_key=api_key or "not-needed",
            base_url=base_url,
            client=client,
            provider=f"{name}.chat",
            provider_options_key=name,
            api_key_env=None,
            send_reasoning=True,
            headers=headers,
            max_retries=max_retries,
            timeout=timeout,
            request_timeout=request_timeout,
            stream_idle_timeout=stream_idle_timeout,
        )
        self.name = name

    def provider_body_options(self, provider_options: dict[str, Any]) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for key in ("openaiCompatible", self.name):
            scoped = provider_options.get(key)
            if isinstance(scoped, dict):
                merged.update(scoped)
        return super().provider_body_options({self.name: merged}) if merged else {}

    def build_body(self, options: CallOptions, *, stream: bool) -> dict[str, Any]:
        body = super().build_body(options, stream=stream)
        response_format = options.response_format
        if response_format and response_format.get("type") == "json":
            apply_mode(body, response_format, self.structured_outputs)
        return body

    def _asks_for_json(self, options: CallOptions) -> bool:
        return bool(options.response_format and options.response_format.get("type") == "json")

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        while True:
            mode = self.structured_outputs
            try:
                return await super().do_generate(options)
            except Exception as exc:
                if not self._fall_back(options, exc, mode):
                    raise

    async def do_stream(self, options: CallOptions) -> StreamResult:
        while True:
            mode = self.structured_outputs
            try:
                return await super().do_stream(options)
            except Exception as exc:
                if not self._fall_back(options, exc, mode):
                    raise

    def _fall_back(self, options: CallOptions, error: BaseException, mode: StructuredOutputs) -> bool:
        """Whether to retry after `error`: it rejected `mode` (the mode the call was sent with)
        and a later mode remains. Concurrent calls rejected together move on one step only."""
        if not self._asks_for_json(options) or not rejects_response_format(error):
            return False
        following = next_mode(mode)
        if following is None:
            return False
        if self.structured_outputs == mode:
            self.structured_outputs = following
        return True

    @classmethod
    def for_provider(cls, name: str, model_id: str) -> OpenAICompatible:
        """The model `model_id` of the named provider, with its key read from the environment."""
        spec = COMPATIBLE_PROVIDERS[name]
        api_key = None
        if spec.api_key_env is not None:
            api_key = os.environ.get(spec.api_key_env)
            if not api_key:
                raise MissingAPIKeyError(
                    f"model {name}/{model_id} needs an API key: "
                    f"set the {spec.api_key_env} environment variable"
                )
        base_url = (os.environ.get(spec.base_url_env) if spec.base_url_env else None) or spec.base_url
        return cls(
            model_id,
            base_url=base_url,
            api_key=api_key,
            name=name,
            structured_outputs=spec.structured_outputs,
        )
