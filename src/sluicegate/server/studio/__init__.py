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
from sluicegate.server.traces import (
    AGENT_ID,
    RESOURCE_ID,
    RecentSpans,
    durable_run,
    run_id_of,
    run_root,
    timeline,
)

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
    """Recent runs, newest first: their root span, agent, duration and processor outcomes. A run
    resumed after a decision is one row: its later traces are listed in `continuations`."""
    recent = await _synced(request)
    ui = settings_of(request).temporal_ui
    rows: dict[str, dict[str, Any]] = {}
    for trace_id in reversed(recent.trace_ids()):  # oldest first: a run's first trace is its row
        spans = recent.spans(trace_id)
        root = run_root(spans)
        if root is None or not _visible(request, root):
            continue
        view = timeline(spans)
        outcomes: dict[str, int] = {}
        for decision in view["processors"]:
            outcomes[str(decision["outcome"])] = outcomes.get(str(decision["outcome"]), 0) + 1
        run_id = run_id_of(spans)
        first = rows.get(run_id) if run_id else None
        started = (root.start_time or 0) / 1e9
        if first is not None:
            first["continuations"].append({"traceId": trace_id, "startTime": started})
            first["durationMs"] += view["durationMs"]
            first["spanCount"] += len(view["spans"])
            for outcome, count in outcomes.items():
                first["outcomes"][outcome] = first["outcomes"].get(outcome, 0) + count
            first["lastTime"] = started
            continue
        rows[run_id or trace_id] = {
            "traceId": trace_id,
            "runId": run_id,
            "name": root.name,
            "agentId": (root.attributes or {}).get(AGENT_ID),
            "startTime": started,
            "lastTime": started,
            "durationMs": view["durationMs"],
            "spanCount": len(view["spans"]),
            "outcomes": outcomes,
            "durable": durable_run(spans, ui),
            "continuations": [],
        }
    return sorted(rows.values(), key=lambda row: row["lastTime"], reverse=True)


@router.get("/traces/{traceId}", responses=ERRORS)
async def get_trace(traceId: str, request: Request) -> dict[str, Any]:
    """One run's spans as a timeline, with every processor decision."""
    spans = (await _synced(request)).spans(traceId)
    if not spans or not _visible(request, run_root(spans)):
        raise not_found("trace", traceId)
    durable = durable_run(spans, settings_of(request).temporal_ui)
    return {
        "traceId": traceId.lower(),
        **timeline(spans),
        "durable": durable,
        "runId": run_id_of(spans),
        "sameRun": _same_run(request, recent_spans=spans_of(request), spans=spans, trace_id=traceId.lower()),
    }


def _same_run(
    request: Request, *, recent_spans: RecentSpans, spans: list[ReadableSpan], trace_id: str
) -> list[str]:
    """The other traces of this trace's agent run (before and after a decision), oldest first."""
    run_id = run_id_of(spans)
    if run_id is None:
        return []
    out = []
    for other in reversed(recent_spans.trace_ids()):
        if other == trace_id:
            continue
        others = recent_spans.spans(other)
        if run_id_of(others) == run_id and _visible(request, run_root(others)):
            out.append(other)
    return out


def mount_studio(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/studio/static", StaticFiles(directory=STATIC), name="studio-static")

    @app.get("/studio", include_in_schema=False)
    async def studio() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html", headers={CSP: STUDIO_POLICY})
