"""Mastra's empty answers for features sluicegate does not have: workspaces,
stored prompts, datasets, experiments, the review queue, tool providers, the agent builder,
workflows. (Scorers list the kept guardrail eval reports: `eval_scores`.)

Each answers exactly what Mastra's server answers when it has none of the thing (an empty list
with its pagination, an empty record), so Studio shows its empty state rather than an error
screen or a refetch loop. Nothing here pretends to store or run anything: the routes that would
create or run one are left out and answer 404.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from sluicegate.server.deps import ERRORS, agent_or_404

router = APIRouter(prefix="/api", tags=["absent"], responses=ERRORS)


def _pagination(page: int, per_page: int) -> dict[str, Any]:
    return {"total": 0, "page": page, "perPage": per_page, "hasMore": False}


_Page = Query(default=0, ge=0, le=1_000_000)
_PerPage = Query(default=20, ge=1, le=1000)


@router.get("/workflows")
async def workflows() -> dict[str, Any]:
    """No Mastra workflows: sluicegate's processor workflows run inside an agent's processor
    chain and have no runs of their own to list, start or watch."""
    return {}


@router.get("/workflows/run-counts")
async def workflow_run_counts() -> dict[str, Any]:
    return {}


@router.get("/workspaces")
async def workspaces() -> dict[str, Any]:
    return {"workspaces": []}


@router.get("/tool-providers")
async def tool_providers() -> dict[str, Any]:
    return {"providers": []}


@router.get("/processor-providers")
async def processor_providers() -> dict[str, Any]:
    return {"providers": []}


@router.get("/stored/prompt-blocks")
async def stored_prompt_blocks(page: int = _Page, perPage: int = _PerPage) -> dict[str, Any]:
    return {"promptBlocks": [], **_pagination(page, perPage)}


@router.get("/stored/agents")
async def stored_agents(page: int = _Page, perPage: int = _PerPage) -> dict[str, Any]:
    return {"agents": [], **_pagination(page, perPage)}


@router.get("/datasets")
async def datasets(page: int = _Page, perPage: int = _PerPage) -> dict[str, Any]:
    return {"datasets": [], "pagination": _pagination(page, perPage)}


@router.get("/experiments")
async def experiments(page: int = _Page, perPage: int = _PerPage) -> dict[str, Any]:
    return {"experiments": [], "pagination": _pagination(page, perPage)}


@router.get("/experiments/review-summary")
async def experiment_review_summary() -> dict[str, Any]:
    return {"counts": []}


@router.get("/editor/builder/settings")
async def builder_settings() -> dict[str, Any]:
    """No agent builder: Studio's defaults (no model policy, every tool and agent visible)."""
    return {"enabled": False, "modelPolicy": {"active": False}, "picker": None}


@router.get("/system/packages")
async def system_packages(request: Request) -> dict[str, Any]:
    """No Mastra packages are installed; with the studio on, the spans Studio's traces view
    reads are kept in memory (`ObservabilityInMemory`)."""
    return {
        "packages": [],
        "isDev": False,
        "cmsEnabled": False,
        "liveKitConnectionRouteEnabled": False,
        "observabilityEnabled": request.app.state.spans is not None,
        "storageType": "sluicegate",
        "observabilityStorageType": "ObservabilityInMemory",
        "observabilityRuntimeStrategy": "realtime",
    }


@router.get("/editor/builder/models/available")
async def builder_models() -> dict[str, Any]:
    return {"providers": []}


@router.get("/channels/platforms")
async def channel_platforms() -> list[Any]:
    """No channels (Slack, Discord, ...) connect agents here."""
    return []


@router.get("/agents/{agentId}/voice/speakers")
async def voice_speakers(agentId: str, request: Request) -> list[Any]:
    """No agent has a voice provider: no speakers, so Studio offers no voice input or output."""
    agent_or_404(request, agentId)
    return []
