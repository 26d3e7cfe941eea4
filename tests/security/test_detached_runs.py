"""Runs `send-message` starts belong to no request, so the connection cap never counted them:
one keep-alive connection could start hundreds of model runs (issue 30, finding 4). They are
bounded per resource and per process (`max_detached_runs_per_resource`,
`max_detached_runs`): past a bound the answer is 429 with `Retry-After` and a body naming the
bound, and a slot is given back however the run ends (finished, failed, cancelled, tripped,
suspended)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from sluicegate import Agent, Sluicegate, tool
from sluicegate.memory import Memory
from sluicegate.models.base import CallOptions, StreamResult
from sluicegate.processors import Processor
from sluicegate.server import ServerSettings, create_app
from sluicegate.storage import SQLiteStore

USAGE = {"inputTokens": 1, "outputTokens": 1}


class GatedModel:
    """Answers once `gate` is set (a run that stays running until the test lets it end)."""

    specification_version = "v2"
    provider = "gated"
    model_id = "m"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = 0

    async def do_stream(self, options: CallOptions) -> StreamResult:
        self.started += 1
        return StreamResult(self._parts())

    async def _parts(self) -> AsyncIterator[dict[str, Any]]:
        await self.gate.wait()
        yield {"type": "text-start", "id": "t"}
        yield {"type": "text-delta", "id": "t", "delta": "ok"}
        yield {"type": "text-end", "id": "t"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError


class FailingModel(GatedModel):
    async def do_stream(self, options: CallOptions) -> StreamResult:
        raise RuntimeError("the provider is down")


class AskingModel(GatedModel):
    async def do_stream(self, options: CallOptions) -> StreamResult:
        return StreamResult(self._ask())

    async def _ask(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "tool-call", "toolCallId": "c1", "toolName": "refund", "input": json.dumps({"n": 1})}
        yield {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}


class Trip(Processor):
    id = "trip"

    def process_input(self, args: Any) -> Any:
        args.abort("not this")


@tool(require_approval=True)
async def refund(n: int) -> str:
    """Refund."""
    return "done"


def _app(**bounds: Any) -> tuple[Any, GatedModel]:
    storage = SQLiteStore(":memory:")
    gated = GatedModel()

    def agent(name: str, model: Any, **options: Any) -> Agent:
        return Agent(name, model=model, memory=Memory(storage=storage), max_retries=0, **options)

    registry = Sluicegate(
        agents={
            "slow": agent("slow", gated),
            "failing": agent("failing", FailingModel()),
            "asking": agent("asking", AskingModel(), tools=[refund]),
            "tripping": agent("tripping", GatedModel(), input_processors=[Trip()]),
        },
        storage=storage,
    )
    return create_app(registry, ServerSettings(**bounds)), gated


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=30)


async def _send(http: httpx.AsyncClient, agent: str, thread: str, resource: str) -> httpx.Response:
    return await http.post(
        f"/api/agents/{agent}/send-message",
        json={"threadId": thread, "resourceId": resource, "message": "hello"},
    )


async def _until(condition: Any, failure: str) -> None:
    deadline = asyncio.get_running_loop().time() + 10
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, failure
        await asyncio.sleep(0.01)


async def _until_free(app: Any) -> None:
    await _until(lambda: not app.state.detached_runs.held, "a finished run kept its slot")


async def test_one_resource_and_one_process_are_bounded_with_429_naming_the_bound() -> None:
    app, gated = _app(max_detached_runs=3, max_detached_runs_per_resource=2)
    async with _client(app) as http:
        for thread in ("t1", "t2"):
            assert (await _send(http, "slow", thread, "mallory")).status_code == 200
        refused = await _send(http, "slow", "t3", "mallory")
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"] == "5"
        body = refused.json()
        assert body["bound"] == "max_detached_runs_per_resource" and body["limit"] == 2
        assert "SLUICEGATE_MAX_DETACHED_RUNS_PER_RESOURCE" in body["error"]
        # Another resource still gets a run, up to the process's bound.
        assert (await _send(http, "slow", "t4", "alice")).status_code == 200
        full = await _send(http, "slow", "t5", "bob")
        assert full.status_code == 429
        assert full.json()["bound"] == "max_detached_runs" and full.json()["limit"] == 3
        await _until(lambda: gated.started >= 3, "the accepted runs did not start")
        await asyncio.sleep(0.05)
        assert gated.started == 3, "a refused message starts no model call"
        # Cancelling one gives its slot back.
        aborted = await http.post(
            "/api/agents/slow/threads/abort", json={"threadId": "t1", "resourceId": "mallory"}
        )
        assert aborted.json() == {"aborted": True}
        await asyncio.sleep(0.05)
        assert (await _send(http, "slow", "t3", "mallory")).status_code == 200
        gated.gate.set()
        await _until_free(app)


async def test_the_old_flood_is_cut_at_the_default_bound() -> None:
    """The finding's attack: one connection, distinct thread ids, as fast as it can post."""
    app, gated = _app()
    async with _client(app) as http:
        answers = [await _send(http, "slow", f"t{i}", "mallory") for i in range(40)]
        statuses = [a.status_code for a in answers]
        assert statuses.count(200) == ServerSettings().max_detached_runs_per_resource == 4
        assert statuses.count(429) == 36
        await _until(lambda: gated.started >= 4, "the accepted runs did not start")
        await asyncio.sleep(0.05)
        assert gated.started == 4
        gated.gate.set()
        await _until_free(app)


@pytest.mark.parametrize("agent", ["slow", "failing", "asking", "tripping"])
async def test_a_slot_is_given_back_however_the_run_ends(agent: str) -> None:
    """Finished, failed at the provider, suspended for an approval, stopped by a tripwire."""
    app, gated = _app(max_detached_runs=1, max_detached_runs_per_resource=1)
    gated.gate.set()
    async with _client(app) as http:
        for round_ in range(3):
            answer = await _send(http, agent, f"t{round_}", "r1")
            assert answer.status_code == 200, (round_, answer.text)
            await _until_free(app)


def test_the_bounds_are_settings_and_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from sluicegate.errors import ConfigurationError

    monkeypatch.setenv("SLUICEGATE_MAX_DETACHED_RUNS", "7")
    monkeypatch.setenv("SLUICEGATE_MAX_DETACHED_RUNS_PER_RESOURCE", "2")
    settings = ServerSettings.from_env()
    assert (settings.max_detached_runs, settings.max_detached_runs_per_resource) == (7, 2)
    with pytest.raises(ConfigurationError, match="max_detached_runs must be a positive integer"):
        ServerSettings(max_detached_runs=0)
    monkeypatch.setenv("SLUICEGATE_MAX_DETACHED_RUNS", "lots")
    with pytest.raises(ConfigurationError, match="SLUICEGATE_MAX_DETACHED_RUNS"):
        ServerSettings.from_env()
