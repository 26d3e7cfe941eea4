"""Guardrail eval reports as Mastra scores: Studio's scorers page lists them.

Each report `POST /api/eval` makes is kept in memory (the last `KEPT` of the process) as one
score row in the shape of Mastra's `scoreRowDataSchema`, under one scorer per evaluated chain
and phase (`eval:<agent or processors>:<phase>`). The row's `score` is one number the report
really computed: the micro-averaged F1 over the labelled spans, or, for a dataset that labels
no spans, the block/pass verdict accuracy; `reason` says which, and `output` is the whole
report. A report with neither number (no span labels and no verdicts) is not kept: there is no
score to show, and none is made up.

`source` is `TEST` (a dataset, not live traffic) and `runId` is the eval's own id: no agent run
stands behind a row, so `/api/scores/run/:runId` and the entity routes are not served. With an
identity hook a caller sees only the reports it ran.
"""

from __future__ import annotations

import uuid
from collections import deque
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Query, Request

from sluicegate.guardrails.evaluation.scores import EvalReport
from sluicegate.server.deps import ERRORS
from sluicegate.server.identity import identity_of

router = APIRouter(prefix="/api/scores", tags=["scores"], responses=ERRORS)

KEPT = 100


def _kept(request: Request) -> deque[tuple[str | None, dict[str, Any]]]:
    state = request.app.state
    rows: deque[tuple[str | None, dict[str, Any]]] | None = getattr(state, "eval_scores", None)
    if rows is None:
        rows = state.eval_scores = deque(maxlen=KEPT)
    return rows


def _headline(report: EvalReport) -> tuple[float, str, str] | None:
    """The report's one number, the metric's name and a sentence about it."""
    if report.kinds:
        total = report.totals()
        if total.f1 is not None:
            return (
                total.f1,
                "f1",
                f"micro-averaged F1 over {total.gold} labelled spans: {total.f1:.3f} "
                f"(precision {total.precision:.3f}, recall {total.recall:.3f})",
            )
    accuracy = report.verdicts.accuracy if report.verdicts is not None else None
    if report.verdicts is not None and accuracy is not None:
        return (
            accuracy,
            "verdict_accuracy",
            f"block/pass verdict accuracy over {report.verdicts.total} examples: {accuracy:.3f}",
        )
    return None


def keep_eval_report(
    request: Request, *, agent_id: str | None, processor_ids: list[str], phase: str, report: EvalReport
) -> None:
    """Keep one eval report as a score row (if it has a number to show)."""
    headline = _headline(report)
    if headline is None:
        return
    score, metric, reason = headline
    target = agent_id or "+".join(processor_ids) or "all-processors"
    if agent_id and processor_ids:
        target = f"{agent_id}/{'+'.join(processor_ids)}"
    scorer = {
        "id": f"eval:{target}:{phase}",
        "name": f"Guardrail eval of {target} ({phase})",
        "description": "sluicegate eval reports: micro-averaged F1 over labelled spans, "
        "or the block/pass verdict accuracy for a dataset without spans",
        "type": "guardrail-eval",
    }
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    eval_id = str(uuid.uuid4())
    row: dict[str, Any] = {
        "id": eval_id,
        "scorerId": scorer["id"],
        "entityId": target,
        "entityType": "AGENT" if agent_id else None,
        "entity": {"id": target, "name": target},
        "runId": eval_id,
        "input": {"examples": report.examples, "phase": phase},
        "output": report.to_dict(),
        "score": score,
        "reason": reason,
        "scorer": scorer,
        "metadata": {"metric": metric},
        "source": "TEST",
        "createdAt": now,
        "updatedAt": None,
    }
    identity = identity_of(request)
    _kept(request).append((identity.resource_id if identity is not None else None, row))


def _visible(request: Request) -> list[dict[str, Any]]:
    """The kept rows the caller may see, newest first."""
    identity = identity_of(request)
    owner = identity.resource_id if identity is not None else None
    return [row for who, row in reversed(_kept(request)) if identity is None or who == owner]


def _entry(rows: list[dict[str, Any]]) -> dict[str, Any]:
    agents = sorted({r["entityId"] for r in rows if r["entityType"] == "AGENT"})
    return {
        "scorer": {"config": rows[0]["scorer"]},
        "agentIds": agents,
        "agentNames": agents,
        "workflowIds": [],
        "isRegistered": False,
        "source": "code",
    }


def _by_scorer(request: Request) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in _visible(request):
        grouped.setdefault(row["scorerId"], []).append(row)
    return grouped


@router.get("/scorers")
async def scorers(request: Request) -> dict[str, Any]:
    """One scorer per evaluated chain and phase that has kept reports."""
    return {scorer_id: _entry(rows) for scorer_id, rows in _by_scorer(request).items()}


@router.get("/scorers/{scorerId}")
async def scorer(scorerId: str, request: Request) -> dict[str, Any] | None:
    rows = _by_scorer(request).get(scorerId)
    return _entry(rows) if rows else None


@router.get("/scorer/{scorerId}")
async def scores_of_scorer(
    scorerId: str,
    request: Request,
    page: int = Query(default=0, ge=0, le=1_000_000),
    perPage: int = Query(default=10, ge=1, le=1000),
    entityId: str | None = Query(default=None, min_length=1, max_length=256),
    entityType: str | None = Query(default=None, min_length=1, max_length=64),
) -> dict[str, Any]:
    """The kept reports of one scorer, newest first, as Mastra's paginated score rows."""
    rows = _by_scorer(request).get(scorerId, [])
    if entityId is not None:
        rows = [r for r in rows if r["entityId"] == entityId]
    if entityType is not None:
        rows = [r for r in rows if r["entityType"] == entityType]
    first = page * perPage
    return {
        "pagination": {
            "total": len(rows),
            "page": page,
            "perPage": perPage,
            "hasMore": first + perPage < len(rows),
        },
        "scores": rows[first : first + perPage],
    }
