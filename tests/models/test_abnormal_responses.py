"""Abnormal provider responses are `APICallError`s, never empty successes, for every adapter; and
the error path never imports an SDK on the event loop."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from sluicegate.errors import APICallError
from sluicegate.models import OpenAICompatible
from sluicegate.models.anthropic_messages import AnthropicMessagesModel
from sluicegate.models.base import CallOptions
from sluicegate.models.openai_responses import OpenAIResponsesModel

from .fake_provider import USER, FakeProvider, named_sse, openai_sse, parts_of
from .test_anthropic_messages import message_start, text_events
from .test_openai_responses import created, message_events


def anthropic(server: FakeProvider) -> AnthropicMessagesModel:
    return AnthropicMessagesModel("claude-sonnet-4-5", api_key="sk-ant-test", base_url=server.url)


def responses(server: FakeProvider) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-5-mini", api_key="sk-test", base_url=f"{server.url}/v1")


def compatible(server: FakeProvider, **options: Any) -> OpenAICompatible:
    return OpenAICompatible("m", base_url=f"{server.url}/v1", **options)


def final_error(parts: list[dict[str, Any]]) -> APICallError:
    assert parts[-1]["type"] == "error", parts[-1]
    assert not any(p["type"] == "finish" for p in parts)
    error = parts[-1]["error"]
    assert isinstance(error, APICallError)
    return error


async def test_anthropic_stream_without_message_stop(fake_provider: FakeProvider) -> None:
    # A clean end of the HTTP body in the middle of the message: no message_delta, no message_stop.
    fake_provider.reply("/v1/messages", sse=named_sse([message_start(), *text_events("Half an")]))
    error = final_error(await parts_of(anthropic(fake_provider), CallOptions(prompt=USER)))
    assert error.is_retryable and "message_stop" in str(error)


async def test_responses_stream_without_completed(fake_provider: FakeProvider) -> None:
    fake_provider.reply("/v1/responses", sse=named_sse([created(), *message_events("msg_1", 0, "Half")]))
    error = final_error(await parts_of(responses(fake_provider), CallOptions(prompt=USER)))
    assert error.is_retryable and "response.completed" in str(error)


async def test_chat_stream_without_finish_reason(fake_provider: FakeProvider) -> None:
    chunk = {"id": "c", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}
    fake_provider.reply("/v1/chat/completions", sse=openai_sse([chunk]))  # [DONE] but no finish_reason
    error = final_error(await parts_of(compatible(fake_provider), CallOptions(prompt=USER)))
    assert error.is_retryable


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/responses", "/v1/chat/completions"])
async def test_html_200_is_an_error_for_every_adapter(fake_provider: FakeProvider, path: str) -> None:
    fake_provider.reply(path, raw=b"<!doctype html><title>Gateway</title>")
    model: Any = {
        "/v1/messages": anthropic,
        "/v1/responses": responses,
        "/v1/chat/completions": compatible,
    }[path](fake_provider)
    with pytest.raises(APICallError) as caught:
        await model.do_stream(CallOptions(prompt=USER))
    assert caught.value.status_code == 200 and caught.value.is_retryable
    assert "<title>Gateway</title>" in (caught.value.response_body or "")


async def test_timeouts_are_validated() -> None:
    from sluicegate.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        OpenAICompatible("m", base_url="http://127.0.0.1:9/v1", request_timeout=0)
    with pytest.raises(ConfigurationError):
        OpenAICompatible("m", base_url="http://127.0.0.1:9/v1", stream_idle_timeout=-1)


def test_a_connection_error_does_not_import_another_sdk(tmp_path: Path) -> None:
    # Finding out whether an OpenAI connection error is retryable used to `import anthropic` on
    # the event loop: a stall of seconds on the first error. Fresh interpreter: nothing preloaded.
    script = textwrap.dedent(
        """
        import asyncio, socket, sys
        from sluicegate.errors import APICallError
        from sluicegate.models import OpenAICompatible
        from sluicegate.models.base import CallOptions

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()  # nothing listens there: connection refused

        async def main():
            model = OpenAICompatible("m", base_url=f"http://127.0.0.1:{port}/v1")
            try:
                await model.do_stream(CallOptions(prompt=[{"role": "user", "content": "hi"}]))
            except APICallError as error:
                print("retryable" if error.is_retryable else "final")
            print("anthropic" in sys.modules)

        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["retryable", "False"]


async def test_non_streamed_answers_are_checked_too(fake_provider: FakeProvider) -> None:
    fake_provider.reply("/v1/chat/completions", raw=b"<html>maintenance</html>")
    with pytest.raises(APICallError) as caught:
        await compatible(fake_provider).do_generate(CallOptions(prompt=USER))
    assert caught.value.is_retryable
    fake_provider.reply(
        "/v1/chat/completions", json={"error": {"type": "server_error", "message": "try later"}}
    )
    with pytest.raises(APICallError) as caught:
        await compatible(fake_provider).do_generate(CallOptions(prompt=USER))
    assert str(caught.value) == "try later" and caught.value.is_retryable
