"""Who is calling: `Identity`, what an application's identity hook returns.

The registry (`Sluicegate(resolve_identity=...)`) takes the hook and the server runs it (see
`sluicegate.server.identity`), so the types live here, below both: the registry never imports
the HTTP layer. Only the hook's request type is Starlette's, named for type checkers alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from sluicegate.errors import ConfigurationError
from sluicegate.messages.validate import check_id

if TYPE_CHECKING:
    from starlette.requests import Request

RESERVED_PREFIXES = ("mastra__", "sluicegate__")


@dataclass(frozen=True)
class Identity:
    """The authenticated caller, as the identity hook returns it.

    `resource_id` is the tenant every route of the request is bound to; `thread_id`, when set,
    pins the request to that one thread (a link shared for one conversation, a support session);
    `context` adds server-side values to the request context of agent runs and tool and processor
    calls (say the user object), replacing any client-sent value of the same key.
    """

    resource_id: str
    thread_id: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            check_id(self.resource_id, "Identity.resource_id")
            if self.thread_id is not None:
                check_id(self.thread_id, "Identity.thread_id")
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        if not isinstance(self.context, Mapping):
            raise ConfigurationError(f"Identity.context must be a mapping, got {type(self.context).__name__}")
        for key in self.context:
            if not isinstance(key, str) or key.startswith(RESERVED_PREFIXES):
                raise ConfigurationError(
                    f"Identity.context key {key!r} is reserved or not a string; "
                    "use resource_id and thread_id for the memory ids"
                )
        object.__setattr__(self, "context", dict(self.context))


IdentityResolver: TypeAlias = "Callable[[Request], Identity | Awaitable[Identity | None] | None]"
"""`resolve_identity(request)`: the caller's `Identity`, or None when the request is not
authenticated. It sees the method, path, headers, cookies and query string; the body is not
read yet (and must not be: the route reads it). Raise `HTTPException` for another answer."""
