"""The HTTP server: Mastra's REST/SSE API over a `Sluicegate` registry, plus the studio.

Needs the `server` extra (`pip install 'sluicegate[server]'`). Start it with
`sluicegate serve app.py`, or build the ASGI app yourself with `create_app`. The names load on
first use, so `sluicegate.server.loader` (used by `sluicegate run`) works without the extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sluicegate.identity import Identity
    from sluicegate.server.app import create_app
    from sluicegate.server.settings import ServerSettings

__all__ = ["Identity", "ServerSettings", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from sluicegate.server.app import create_app

        return create_app
    if name == "ServerSettings":
        from sluicegate.server.settings import ServerSettings

        return ServerSettings
    if name == "Identity":
        from sluicegate.identity import Identity

        return Identity
    raise AttributeError(f"module 'sluicegate.server' has no attribute {name!r}")
