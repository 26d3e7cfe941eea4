"""Routes that Mastra's Studio (`npx mastra studio`) calls beyond the agent API that
`@mastra/client-js` uses: auth capabilities, providers, observability over our own spans, and
Mastra's empty answers for the features sluicegate does not have.

Each module answers in the response shapes of Mastra's server handlers
(`packages/server/src/server/handlers`), so every Studio view either works or shows its empty
state instead of an error or a refetch loop.
"""

from __future__ import annotations

from fastapi import APIRouter

from sluicegate.server.mastra import (
    absent,
    auth,
    eval_scores,
    memory_views,
    metrics,
    observability,
    providers,
    signals,
)


def routers() -> list[APIRouter]:
    """The routers to include, most specific first (`/api/agents/providers` before the
    agent routes' `/api/agents/{agentId}`)."""
    return [
        providers.router,
        auth.router,
        memory_views.router,
        metrics.router,
        observability.router,
        signals.router,
        eval_scores.router,
        absent.router,
    ]
