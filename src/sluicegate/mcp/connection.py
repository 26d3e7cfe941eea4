"""`ServerConnection`: one MCP server, started on first use and stopped on close.

The SDK's transports are anyio context managers whose task groups must be entered and left by
the same task, while tool calls arrive from whatever task the agent runs them in. So each
connection has an owner task that enters the transport and the SDK `Client`, hands the client
over, and waits to be told to stop; calls use the client from their own tasks. Every request is
bounded by the server's `timeout`, every connect by `connect_timeout`: a server that hangs is a
`MCPTimeoutError`, one that died a `MCPConnectionError` (and the next call starts it afresh),
never a run that waits forever. Stopping is the SDK's own shutdown (stdin closed, then the
process group terminated and killed), awaited by `close()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from sluicegate.errors import MissingExtraError, ToolError
from sluicegate.mcp.config import ServerConfig

try:
    import anyio
    import httpx2
    import pydantic
    from mcp import Client, Implementation, MCPError, StdioServerParameters
    from mcp.client.sse import sse_client
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, ElicitRequestParams, ElicitResult
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("mcp", extra="mcp", feature="sluicegate.mcp (MCP servers' tools)") from exc

log = logging.getLogger("sluicegate.mcp")

T = TypeVar("T")

CLIENT_INFO = Implementation(name="sluicegate", version="0.1.0")

_DEAD_CONNECTION = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    ConnectionError,
    httpx2.TransportError,
)
"""What a request raises when the server went away under it."""


class MCPConnectionError(ToolError):
    """An MCP server could not be started or reached, or went away mid-request."""


class MCPTimeoutError(MCPConnectionError, TimeoutError):
    """An MCP server did not answer within its timeout."""


class Askable(Protocol):
    """A call in flight that a server's question (elicitation) may go to (`elicitation.OpenCall`)."""

    @property
    def asking(self) -> bool:
        """Whether a question of this call waits for its answer."""

    @property
    def finished(self) -> bool:
        """Whether the call has ended (no question can belong to it)."""

    def ask(self, params: ElicitRequestParams) -> asyncio.Future[ElicitResult]:
        """The future the answer will be set on."""


class ServerConnection:
    """One configured server: `request(op, what)` runs `op(client)` on a live connection.

    `open_calls` are the calls in flight that can wait for a person: a question the server asks
    (elicitation) goes to the oldest of them without a question open (else the oldest), and is
    answered `cancel` when there is none (a call made where nobody can be asked). The protocol
    does not say which call a question belongs to, so with concurrent askable calls to one
    server a question may be shown under another of them; its answer still goes to the
    question."""

    def __init__(self, config: ServerConfig, *, elicitation: bool = True) -> None:
        self.config = config
        self.elicitation = elicitation
        self.open_calls: list[Askable] = []
        self._lock = asyncio.Lock()
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._retired: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def connected(self) -> bool:
        return self._client is not None and self._owner is not None and not self._owner.done()

    async def request(self, op: Callable[[Client], Awaitable[T]], what: str, *, bounded: bool = True) -> T:
        """`op` on the live client, within the server's timeout (`bounded=False`: no deadline,
        for a call whose caller bounds each wait itself); a dead connection is retired so the
        next request starts the server again."""
        client = self._client if self.connected else await self._connect()
        assert client is not None
        name = self.config.name
        timeout = self.config.timeout if bounded else None
        try:
            async with asyncio.timeout(timeout):
                return await op(client)
        except TimeoutError as exc:
            raise MCPTimeoutError(
                f"MCP server {name!r}: {what} got no answer within {self.config.timeout:g} s"
            ) from exc
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise MCPTimeoutError(f"MCP server {name!r}: {what} timed out: {exc.message}") from exc
            if exc.code == CONNECTION_CLOSED:
                self._retire()
                raise MCPConnectionError(f"MCP server {name!r} closed the connection during {what}") from exc
            raise
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'/'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
                for e in exc.errors(include_url=False, include_context=False)[:5]
            )
            raise MCPConnectionError(
                f"MCP server {name!r} answered {what} with something that is not MCP: {problems}"
            ) from exc
        except _DEAD_CONNECTION as exc:
            self._retire()
            raise MCPConnectionError(f"MCP server {name!r} went away during {what}: {describe(exc)}") from exc

    async def _connect(self) -> Client:
        async with self._lock:
            if self._closed:  # a call that raced with close() must not start a server nobody stops
                raise MCPConnectionError(f"MCP server {self.config.name!r}: its client is closed")
            if self.connected:
                assert self._client is not None
                return self._client
            self._retire()
            kinds = [self.config.kind] if self.config.kind != "http" else ["streamable-http", "sse"]
            failures: list[str] = []
            for kind in kinds:
                try:
                    self._client = await self._start(kind)
                    return self._client
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    failures.append(f"{kind}: {describe(exc)}")
                    log.debug("MCP server %r: %s connection failed", self.config.name, kind, exc_info=True)
            raise MCPConnectionError(
                f"MCP server {self.config.name!r} could not be started or reached ({'; '.join(failures)})"
            )

    async def _start(self, kind: str) -> Client:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Client] = loop.create_future()
        stop = asyncio.Event()
        owner = asyncio.create_task(self._own(kind, ready, stop), name=f"mcp-server-{self.config.name}")
        try:
            async with asyncio.timeout(self.config.connect_timeout):
                client = await asyncio.shield(ready)
        except BaseException as exc:
            stop.set()
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
            if isinstance(exc, TimeoutError):
                raise TimeoutError(f"no answer within {self.config.connect_timeout:g} s") from exc
            raise
        self._stop, self._owner = stop, owner
        return client

    async def _own(self, kind: str, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """The connection's lifetime, in one task: enter, hand over, wait, leave."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = await self._transport(kind, stack)
                client = await stack.enter_async_context(
                    Client(
                        transport,
                        client_info=CLIENT_INFO,
                        mode=self.config.protocol,
                        elicitation_callback=self._on_elicit if self.elicitation else None,
                    )
                )
                ready.set_result(client)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                if isinstance(exc, asyncio.CancelledError):
                    ready.cancel()
                else:
                    ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(describe(exc)))
            elif not isinstance(exc, asyncio.CancelledError):
                log.debug(
                    "MCP server %r: the connection ended with an error", self.config.name, exc_info=True
                )
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _on_elicit(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        """A question from the server: to the oldest call in flight that can take it, whose
        answer (a person's, or `cancel` when the wait ends) goes back to the server."""
        calls = [call for call in self.open_calls if not call.finished]
        if calls:
            call = next((c for c in calls if not c.asking), calls[0])
            return await call.ask(params)
        log.info("MCP server %r asked for input with no call able to wait for a person", self.config.name)
        return ElicitResult(action="cancel")

    async def _transport(self, kind: str, stack: contextlib.AsyncExitStack) -> Any:
        config = self.config
        if kind == "stdio":
            assert config.command is not None
            parameters = StdioServerParameters(
                command=config.command, args=list(config.args), env=config.env, cwd=config.cwd
            )
            return stdio_client(parameters)
        assert config.url is not None
        if kind == "sse":
            return sse_client(config.url, headers=config.headers, timeout=config.connect_timeout)
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=config.headers,
                timeout=httpx2.Timeout(config.connect_timeout, read=max(config.timeout, 300.0)),
            )
        )
        return streamable_http_client(config.url, http_client=http)

    def _retire(self) -> None:
        """Stop the current connection (if any) without waiting; `close` waits for it."""
        if self._owner is not None:
            assert self._stop is not None
            self._stop.set()
            self._retired.add(self._owner)
            self._owner.add_done_callback(self._retired.discard)
        self._client = self._stop = self._owner = None

    def reopen(self) -> None:
        """Allow connecting again after `close`."""
        self._closed = False

    async def close(self) -> None:
        """Stop the server (or hang up) and wait until it is gone; until `reopen`, requests fail
        instead of starting it again."""
        self._closed = True
        async with self._lock:
            self._retire()
            waiting = list(self._retired)
            if waiting:
                await asyncio.gather(*waiting, return_exceptions=True)


_URL_SECRETS = re.compile(r"(?P<scheme>https?://)(?:[^\s/@'\"]*@)?(?P<rest>[^\s?#'\"]*)(?:[?#][^\s'\"]*)?")
"""A URL's credentials and query (`?api_key=...` is common in MCP server URLs) are left out of
error texts, which reach logs and, as tool errors, the model."""


def describe(exc: BaseException) -> str:
    """One line for an error, the first real one inside anyio's exception groups, without the
    credentials or query of any URL in it."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = _URL_SECRETS.sub(r"\g<scheme>\g<rest>", str(exc) or type(exc).__name__)
    return text if len(text) <= 500 else text[:500] + "…"
