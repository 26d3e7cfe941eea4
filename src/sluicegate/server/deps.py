"""What every route needs: the registry and settings of the app serving it, and lookups that
turn a missing id into a 404."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from pydantic import BaseModel

from sluicegate.agent import Agent
from sluicegate.registry import Sluicegate
from sluicegate.server.errors import unknown_agent
from sluicegate.server.settings import ServerSettings
from sluicegate.server.traces import RecentSpans


class ErrorBody(BaseModel):
    error: str
    field: str | None = None


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Bad input; `field` names what was wrong."},
    401: {"model": ErrorBody, "description": "Missing or wrong bearer token."},
    404: {"model": ErrorBody, "description": "No such agent, thread, processor or tool."},
    413: {"model": ErrorBody, "description": "Request body too large."},
}


def registry_of(request: Request) -> Sluicegate:
    registry: Sluicegate = request.app.state.registry
    return registry


def settings_of(request: Request) -> ServerSettings:
    settings: ServerSettings = request.app.state.settings
    return settings


def spans_of(request: Request) -> RecentSpans:
    spans: RecentSpans = request.app.state.spans
    return spans


def agent_or_404(request: Request, agent_id: str) -> tuple[str, Agent]:
    registry = registry_of(request)
    agent = registry.get_agent(agent_id)
    if agent is None:
        raise unknown_agent(agent_id, list(registry.agents))
    key = next((k for k, a in registry.agents.items() if a is agent), agent_id)
    return key, agent
