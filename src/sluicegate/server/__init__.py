"""The HTTP server: Mastra's REST/SSE API over a `Sluicegate` registry, plus the studio.

Needs the `server` extra (`pip install 'sluicegate[server]'`). Start it with
`sluicegate serve app.py`, or build the ASGI app yourself with `create_app`.
"""

from __future__ import annotations

from sluicegate.server.app import create_app
from sluicegate.server.settings import ServerSettings

__all__ = ["ServerSettings", "create_app"]
