"""What every SDK-backed provider adapter shares.

The OpenAI Chat, OpenAI Responses and Anthropic Messages adapters differ only in how they map a
V2 call to a request body and a response (or a stream of events) back to V2 parts. The rest is
the same and lives here: the constructor options, the SDK client built on first use (so the key
is read then, and a missing one names its environment variable), the raw `POST` through the SDK
with its exceptions turned into `APICallError`, and the `do_generate` / `do_stream` skeleton.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from sluicegate.errors import MissingAPIKeyError
from sluicegate.models._http_errors import to_api_call_error
from sluicegate.models._prompt_parts import timestamp
from sluicegate.models._response_checks import (
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_STREAM_IDLE_TIMEOUT,
    check_event_stream,
    check_json_answer,
    check_timeouts,
    no_response_error,
    sdk_timeout,
)
from sluicegate.models.base import CallOptions, GenerateResult, StreamPart, StreamResult


def response_metadata(response: dict[str, Any], created: Any) -> dict[str, Any]:
    """The V2 response-metadata fields (`id`, `modelId`, `timestamp`) of a provider response."""
    return {"id": response.get("id"), "modelId": response.get("model"), "timestamp": timestamp(created)}


class SDKModel(ABC):
    """A `LanguageModel` that talks to its provider through an official SDK client.

    Subclasses set `path` (the endpoint, relative to the client's base URL), `default_provider`
    and `default_api_key_env`, and implement
    `_sdk_classes`, `build_body`, `_generate_result` and `_parts`.
    """

    specification_version = "v2"
    path: ClassVar[str]
    default_provider: ClassVar[str]
    default_api_key_env: ClassVar[str | None]
    """The environment variable the key is read from when `api_key` is not given."""
    missing_key_message: ClassVar[str] = (
        "{provider} needs an API key: set the {env} environment variable or pass api_key="
    )
    """Formatted with `provider`, `model_id` and `env` when the key variable is unset."""

    def __init__(
        self,
        model_id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        headers: dict[str, str] | None = None,
        max_retries: int = 0,
        timeout: float | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT,
    ) -> None:
        self._model_id = model_id
        self._provider = self.default_provider
        self._api_key_env = self.default_api_key_env
        self._api_key = api_key
        self._base_url = base_url
        self._client = client
        self._loop_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._headers = headers
        self._max_retries = max_retries
        self._timeout = timeout
        self._client_lock = threading.Lock()
        self.request_timeout, self.stream_idle_timeout = check_timeouts(request_timeout, stream_idle_timeout)
        """Seconds to connect and receive the response headers; None waits forever."""

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_id(self) -> str:
        return self._model_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model_id!r})"

    # ------------------------------------------------------------------ client

    @abstractmethod
    def _sdk_classes(self) -> tuple[Any, Any]:
        """The SDK's async client class and its `AsyncStream` class (imported on first use)."""

    def client(self) -> Any:
        """The SDK client, created on first use (the API key is read then). One per event loop:
        an SDK client's connection pool belongs to the loop that opened it, so a client made
        under one `asyncio.run` fails ("Event loop is closed") under the next."""
        if self._client is not None:
            return self._client
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        client = self._loop_clients.get(loop) if loop is not None else self._no_loop_client
        if client is None:
            client = self._new_client()
            if loop is not None:
                self._loop_clients[loop] = client
            else:
                self._no_loop_client = client
        return client

    _no_loop_client: Any = None

    def _new_client(self) -> Any:
        client_cls, _ = self._sdk_classes()
        api_key = self._api_key
        if not api_key and self._api_key_env:
            api_key = os.environ.get(self._api_key_env)
            if not api_key:
                raise MissingAPIKeyError(
                    self.missing_key_message.format(
                        provider=self._provider, model_id=self._model_id, env=self._api_key_env
                    )
                )
        kwargs: dict[str, Any] = {
            "api_key": api_key or "not-needed",
            "max_retries": self._max_retries,
            "default_headers": self._headers,
        }
        if self._base_url:
            kwargs["base_url"] = self._base_url
        if self._timeout is not None:
            kwargs["timeout"] = self._timeout
        return client_cls(**kwargs)

    def _url(self) -> str:
        return str(self.client().base_url).rstrip("/") + self.path

    async def _ensure_client(self) -> Any:
        """The client; built in a worker thread the first time (importing an SDK takes a
        second or more, which must not freeze the event loop)."""
        if self._client is None:
            await asyncio.to_thread(self._build_client)
        return self.client()

    def _build_client(self) -> None:
        with self._client_lock:  # two first requests at once build one client, not two
            self.client()
        # The SDKs' HTTP stack loads its asyncio backend on the first request: load it here too.
        try:
            importlib.import_module("anyio._backends._asyncio")
        except ImportError:
            pass

    def _request_options(self, client: Any) -> dict[str, Any]:
        if self._timeout is not None:  # the caller's own single timeout, as the SDK reads it
            return {}
        return {"timeout": sdk_timeout(client, self.request_timeout, self.stream_idle_timeout)}

    async def _post(self, body: dict[str, Any], *, stream: bool) -> Any:
        """POST `body` to `path`, returning the decoded JSON (or the SDK's event stream).

        A stream must start (response headers) within `request_timeout`, and must be an event
        stream: anything else (an HTML page, a JSON error with status 200) is an `APICallError`."""
        client = await self._ensure_client()
        options = self._request_options(client)
        try:
            if stream:
                _, stream_cls = self._sdk_classes()
                try:
                    async with asyncio.timeout(self.request_timeout):
                        events = await client.post(
                            self.path,
                            body=body,
                            cast_to=object,
                            stream=True,
                            stream_cls=stream_cls[object],
                            options=options,
                        )
                except TimeoutError as exc:
                    raise no_response_error(self._url(), self.request_timeout, body) from exc
                await check_event_stream(events, url=self._url(), request_body=body)
                return events
            data = await client.post(self.path, body=body, cast_to=object, options=options)
            check_json_answer(data, url=self._url(), request_body=body)
            return data
        except Exception as exc:
            raise to_api_call_error(exc, url=self._url(), request_body=body) from exc

    # ------------------------------------------------------------------ calls

    @abstractmethod
    def build_body(self, options: CallOptions, *, stream: bool) -> dict[str, Any]:
        """The provider request body for `options`."""

    @abstractmethod
    def _generate_result(self, body: dict[str, Any], data: Any) -> GenerateResult:
        """A non-streaming response `data` (sent for `body`) as a `GenerateResult`."""

    @abstractmethod
    def _parts(self, stream: Any, body: dict[str, Any]) -> AsyncIterator[StreamPart]:
        """The SDK's event `stream` (opened for `body`) as V2 stream parts."""

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        body = self.build_body(options, stream=False)
        data = await self._post(body, stream=False)
        return self._generate_result(body, data)

    async def do_stream(self, options: CallOptions) -> StreamResult:
        body = self.build_body(options, stream=True)
        stream = await self._post(body, stream=True)
        return StreamResult(stream=self._parts(stream, body), request={"body": body})
