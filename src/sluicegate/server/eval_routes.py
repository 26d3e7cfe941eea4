"""`POST /api/eval`: `sluicegate eval` over HTTP, for the studio's eval page (the dataset is
the uploaded JSONL's text; the report comes back as JSON, plus the HTML page on request).

Bounded so that one request cannot hold the server: the examples (`max_eval_examples`), the
processors named (`MAX_EVAL_PROCESSORS`, duplicates dropped), the chunks streamed
(`max_eval_chunks`), one evaluation at a time, the request timeout; and the evaluation gives the
event loop a turn every few milliseconds (`guardrails.evaluation.pacing`), so other requests are
answered meanwhile and the timeout and a disconnect can stop it."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from pydantic import AfterValidator, Field

from sluicegate.errors import ConfigurationError
from sluicegate.guardrails.evaluation import EvaluationError, LabelMap, evaluate, render
from sluicegate.guardrails.evaluation.dataset import DatasetError, Example, read_lines
from sluicegate.server.agents import run_to_end
from sluicegate.server.bodies import _Body
from sluicegate.server.deps import ERRORS, registry_of, settings_of
from sluicegate.server.errors import ApiError, bad_request
from sluicegate.server.eval_chain import select_chain
from sluicegate.server.mastra.eval_scores import keep_eval_report

router = APIRouter(prefix="/api/eval", tags=["eval"])

MAX_EVAL_PROCESSORS = 32
"""The most processor ids one evaluation may name (a chain is a handful; each id runs once)."""


def _once_each(ids: list[str]) -> list[str]:
    """The ids in order, each once: naming a processor twice does not run it twice."""
    return list(dict.fromkeys(ids))


class EvalBody(_Body):
    dataset: str = Field(min_length=1, description="The JSONL dataset's text (see docs/evaluation.md).")
    agentId: str | None = Field(default=None, min_length=1)
    processors: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=200)]], AfterValidator(_once_each)
    ] = Field(
        default_factory=list,
        max_length=MAX_EVAL_PROCESSORS,
        description=f"Processor ids to run (narrows the agent's); at most {MAX_EVAL_PROCESSORS}, each once.",
    )
    phase: Literal["input", "output"] = "input"
    chunkChars: int = Field(default=8, ge=1, le=4096)
    labels: dict[str, str] = Field(
        default_factory=dict, description="Extra placeholder/label → label entries."
    )
    html: bool = Field(default=False, description="Also return the self-contained HTML report.")


def _one_at_a_time(request: Request) -> asyncio.Lock:
    """The process's evaluation lock: a dataset may call a judge model per example, so two
    callers cannot multiply that spend by sending evaluations side by side."""
    state = request.app.state
    lock: asyncio.Lock | None = getattr(state, "eval_lock", None)
    if lock is None:
        lock = state.eval_lock = asyncio.Lock()
    return lock


@router.post("", responses={**ERRORS, 429: ERRORS[400], 504: ERRORS[400]})
async def run_eval(body: EvalBody, request: Request) -> dict[str, Any]:
    try:
        examples = read_lines(body.dataset.splitlines())
    except DatasetError as exc:
        raise bad_request("dataset", str(exc)) from None
    limit = settings_of(request).max_eval_examples
    if len(examples) > limit:
        raise ApiError(
            413,
            f"the dataset has {len(examples)} examples; at most {limit} per evaluation "
            "(SLUICEGATE_EVAL_MAX_EXAMPLES)",
            field="dataset",
        )
    if body.phase == "output":
        _check_chunks(examples, body.chunkChars, settings_of(request).max_eval_chunks)
    lock = _one_at_a_time(request)
    if lock.locked():
        raise ApiError(429, "an evaluation is already running on this server; retry when it ends")
    async with lock:
        return await run_to_end(request, _evaluate(body, examples, request))


def _check_chunks(examples: list[Example], chunk_chars: int, limit: int) -> None:
    """413 when streaming the examples in `chunk_chars` pieces would exceed `limit` chunks."""
    chunks = sum(-(-len(e.text) // chunk_chars) for e in examples)
    if chunks > limit:
        chars = sum(len(e.text) for e in examples)
        raise ApiError(
            413,
            f"chunkChars: the evaluation would stream {chunks:,} chunks ({len(examples):,} examples, "
            f"{chars:,} characters at chunkChars {chunk_chars}); at most {limit:,} per evaluation "
            "(SLUICEGATE_EVAL_MAX_CHUNKS): raise chunkChars or send fewer examples",
            field="chunkChars",
        )


async def _evaluate(body: EvalBody, examples: list[Example], request: Request) -> dict[str, Any]:
    try:
        chain = await select_chain(
            registry_of(request), agent_id=body.agentId, processor_ids=body.processors, phase=body.phase
        )
    except ConfigurationError as exc:
        raise bad_request(
            "processors" if body.processors and not body.agentId else "agentId", str(exc)
        ) from None
    try:
        report = await evaluate(
            chain, examples, phase=body.phase, chunk_chars=body.chunkChars, labels=LabelMap(body.labels)
        )
    except EvaluationError as exc:
        raise ApiError(422, str(exc), field="dataset") from None
    keep_eval_report(
        request, agent_id=body.agentId, processor_ids=body.processors, phase=body.phase, report=report
    )
    out: dict[str, Any] = {"report": report.to_dict()}
    if body.html:
        out["html"] = render(report, "html", title="sluicegate eval")
    return out
