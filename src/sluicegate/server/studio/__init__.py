"""The studio: a browser view of the agents, a streaming chat, each run's timeline of
processor decisions, memory threads, and the processor catalogue with "try it".

The pages are static HTML plus one small script that reads the same `/api` routes a Mastra
client uses (sending the bearer token the user enters, when the server wants one); no build
step. The only studio-specific routes are the two trace views under `/api/studio`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from opentelemetry.sdk.trace import ReadableSpan

from sluicegate.server.deps import ERRORS, settings_of, spans_of
from sluicegate.server.errors import not_found
from sluicegate.server.headers import CSP, STUDIO_POLICY
from sluicegate.server.identity import identity_of
from sluicegate.server.traces import AGENT_ID, RESOURCE_ID, RecentSpans, durable_run, run_root, timeline

log = logging.getLogger("sluicegate.server.studio")

STATIC = Path(__file__).parent / "static"

router = APIRouter(prefix="/api/studio", tags=["studio"])


def _visible(request: Request, root: ReadableSpan | None) -> bool:
    """Whether the caller may see a run: with an identity hook, only runs of its resource."""
    identity = identity_of(request)
    if identity is None:
        return True
    return root is not None and (root.attributes or {}).get(RESOURCE_ID) == identity.resource_id


async def _synced(request: Request) -> RecentSpans:
    """The app's spans, with what is waiting written and what other instances stored read
    (storage that fails leaves the view as it is in memory, logged)."""
    recent = spans_of(request)
    try:
        await recent.sync()
    except Exception:
        log.exception("could not sync the studio's runs with storage; showing those in memory")
    return recent


@router.get("/traces", responses=ERRORS)
async def list_traces(request: Request) -> list[dict[str, Any]]:
    """Recent runs, newest first: their root span, agent, duration and processor outcomes."""
    recent = await _synced(request)
    ui = settings_of(request).temporal_ui
    out = []
    for trace_id in recent.trace_ids():
        spans = recent.spans(trace_id)
        view = timeline(spans)
        root = run_root(spans)
        if root is None or not _visible(request, root):
            continue
        outcomes: dict[str, int] = {}
        for decision in view["processors"]:
            outcomes[str(decision["outcome"])] = outcomes.get(str(decision["outcome"]), 0) + 1
        out.append(
            {
                "traceId": trace_id,
                "name": root.name,
                "agentId": (root.attributes or {}).get(AGENT_ID),
                "startTime": (root.start_time or 0) / 1e9,
                "durationMs": view["durationMs"],
                "spanCount": len(view["spans"]),
                "outcomes": outcomes,
                "durable": durable_run(spans, ui),
            }
        )
    return out


@router.get("/traces/{traceId}", responses=ERRORS)
async def get_trace(traceId: str, request: Request) -> dict[str, Any]:
    """One run's spans as a timeline, with every processor decision."""
    spans = (await _synced(request)).spans(traceId)
    if not spans or not _visible(request, run_root(spans)):
        raise not_found("trace", traceId)
    durable = durable_run(spans, settings_of(request).temporal_ui)
    return {"traceId": traceId.lower(), **timeline(spans), "durable": durable}


def mount_studio(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/studio/static", StaticFiles(directory=STATIC), name="studio-static")

    @app.get("/studio", include_in_schema=False)
    async def studio() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html", headers={CSP: STUDIO_POLICY})
