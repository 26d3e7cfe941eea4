"""Who is calling: the application's identity hook, and the checks that bind every route to
the resource (and optionally the thread) it returns.

Without a hook the server trusts the `resourceId` / `memory.resource` a client sends, as
Mastra's server does; that is right only behind a trusted backend. With
`Sluicegate(..., resolve_identity=hook)` the server runs `hook(request)` on every `/api`
request before the route: `None` answers 401, an `Identity` binds the request to
`identity.resource_id` (and `identity.thread_id` when set). Routes then use the bound ids; a
request that names another resource or thread is refused with 403 instead of being served or
silently redirected. Agent runs get the ids as `RESOURCE_ID_KEY` / `THREAD_ID_KEY` in their
request context, so processors, tools and memory see the authenticated values.

```python
from sluicegate.server import Identity

def resolve_identity(request):
    user = my_sessions.get(request.headers.get("x-session", ""))
    return Identity(resource_id=user.id) if user else None
```
"""

from __future__ import annotations

import inspect
import ipaddress
import logging
from typing import TYPE_CHECKING, Any

from starlette.exceptions import HTTPException
from starlette.requests import Request

from sluicegate.identity import Identity as Identity
from sluicegate.identity import IdentityResolver as IdentityResolver
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from sluicegate.server.auth import ASGIApp, Receive, Scope, Send, is_protected, route_path, send_json
from sluicegate.server.errors import ApiError

if TYPE_CHECKING:
    from sluicegate.registry import Sluicegate
    from sluicegate.server.bodies import AgentCallBody

log = logging.getLogger("sluicegate.server")

SCOPE_KEY = "sluicegate.identity"
"""Where the gate leaves the request's `Identity` in the ASGI scope."""


class IdentityGate:
    """Runs the identity hook for every request under `protected` (CORS preflights and the
    `/api` liveness probe pass): 401 when it returns None, 500 when it fails, otherwise the
    `Identity` is left in the scope for the routes. Fails closed: nothing else reaches a route."""

    def __init__(
        self, app: ASGIApp, *, resolve: IdentityResolver, protected: tuple[str, ...] = ("/api",)
    ) -> None:
        self.app = app
        self._resolve = resolve
        self._protected = protected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
            return
        if not is_protected(scope, self._protected):
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        scope.pop(SCOPE_KEY, None)  # only the hook sets it
        try:
            identity = self._resolve(Request(scope))
            if inspect.isawaitable(identity):
                identity = await identity
        except HTTPException as exc:
            headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (exc.headers or {}).items()]
            await send_json(send, exc.status_code, {"error": str(exc.detail)}, headers)
            return
        except Exception:
            log.exception("the identity hook failed on %s %s", scope.get("method"), path)
            await send_json(send, 500, {"error": "could not establish who is calling"}, [])
            return
        if identity is None:
            await send_json(send, 401, {"error": "not authenticated"}, [])
            return
        if not isinstance(identity, Identity):
            log.error("the identity hook returned a %s, not an Identity or None", type(identity).__name__)
            await send_json(send, 500, {"error": "could not establish who is calling"}, [])
            return
        scope[SCOPE_KEY] = identity
        await self.app(scope, receive, send)


def identity_of(request: Request) -> Identity | None:
    """The request's `Identity`; None when the application configured no hook."""
    identity = request.scope.get(SCOPE_KEY)
    if isinstance(identity, Identity):
        return identity
    registry: Sluicegate = request.app.state.registry
    if registry.resolve_identity is not None:  # a route the gate did not cover: fail closed
        raise ApiError(401, "not authenticated")
    return None


def bound_resource(request: Request, given: str | None, where: str) -> str | None:
    """The resource a route works on: the authenticated one (403 when `given` names another),
    or `given` itself without an identity hook."""
    identity = identity_of(request)
    if identity is None:
        return given
    if given is not None and given != identity.resource_id:
        raise ApiError(403, f"{where}: {given!r} is not the authenticated resource", field=where)
    return identity.resource_id


def bound_thread(request: Request, given: str | None, where: str) -> str | None:
    """The thread a route works on: the pinned one when the identity pins a thread (403 when
    `given` names another), else `given`."""
    identity = identity_of(request)
    if identity is None or identity.thread_id is None:
        return given
    if given is not None and given != identity.thread_id:
        raise ApiError(403, f"{where}: {given!r} is not the thread this request is limited to", field=where)
    return identity.thread_id


def bind_context(request: Request, context: RequestContext) -> RequestContext:
    """`context` (built from the client's `requestContext`) with the identity's values and
    reserved keys set over it."""
    identity = identity_of(request)
    if identity is not None:
        for key, value in identity.context.items():
            context.set(key, value)
        context.set(RESOURCE_ID_KEY, identity.resource_id)
        if identity.thread_id is not None:
            context.set(THREAD_ID_KEY, identity.thread_id)
    return context


def warn_if_exposed(host: str, registry: Sluicegate) -> bool:
    """Log a warning (and return True) when the server listens beyond loopback while clients
    choose their own resource ids (no identity hook)."""
    if registry.resolve_identity is not None:
        return False
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        return False
    log.warning(
        "serving on %s without an identity hook: any client that reaches the API can name any "
        "resource id and read its threads. Put the server behind a backend you trust, or pass "
        "Sluicegate(resolve_identity=...) to derive the resource from the authenticated request "
        "(docs/security.md).",
        host,
    )
    return True


def bind_run(request: Request, body: AgentCallBody, options: dict[str, Any], has_memory: bool) -> None:
    """Bind the `generate`/`stream` options of `body` to the request's identity: every resource
    and thread the body names must be the bound ones (403 otherwise), the memory option gets the
    bound ids, and the run's request context carries them as reserved keys. A pinned thread is
    used even when the body names none (when the agent has memory)."""
    identity = identity_of(request)
    if identity is None:
        return
    memory_body = body.memory
    bound_resource(request, memory_body.resource if memory_body else None, "memory.resource")
    bound_resource(request, body.resourceId, "resourceId")
    if memory_body is not None:
        thread = memory_body.thread
        bound_thread(request, thread if isinstance(thread, str) else thread.id, "memory.thread")
    bound_thread(request, body.threadId, "threadId")
    memory = options.get("memory")
    if memory is not None:
        memory["resource"] = identity.resource_id
    elif identity.thread_id is not None and has_memory:
        options["memory"] = {"thread": identity.thread_id, "resource": identity.resource_id}
    bind_context(request, options["request_context"])
