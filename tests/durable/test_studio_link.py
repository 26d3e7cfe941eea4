"""Durable runs in the studio: a worker keeps its runs' spans in the app's storage, the studio of
another app on that storage lists them with their Temporal workflow, and the run page links to
Temporal's Web UI (from settings only) or shows the CLI command, with span data kept as text."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.trace import NoOpTracerProvider
from temporalio.client import Client
from tests.server import test_studio as studio

from sluicegate import Agent, Sluicegate
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.errors import ConfigurationError
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.traces import install_recent_spans
from sluicegate.server.worker_spans import kept_spans
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step
from sluicegate.tracing import configure
from sluicegate.tracing.attributes import DURABLE_NAMESPACE, DURABLE_TASK_QUEUE, DURABLE_WORKFLOW_ID

UI = "http://127.0.0.1:8233"
chromium = pytest.mark.skipif(
    not os.path.exists(studio.CHROMIUM) and not os.environ.get("SLUICEGATE_REQUIRE_SERVICES"),
    reason="chromium is not installed (apt-get install chromium)",
)
browser = studio.browser  # one Chromium for the module


async def _studio_traces(store_path: Path, settings: ServerSettings) -> list[dict[str, Any]]:
    store = SQLiteStore(str(store_path))
    web = create_app(Sluicegate(storage=store), settings)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=web), base_url="http://studio"
        ) as http:
            listed = await http.get("/api/studio/traces")
            assert listed.status_code == 200, listed.text
            out: list[dict[str, Any]] = listed.json()
            for row in out:
                detail = await http.get(f"/api/studio/traces/{row['traceId']}")
                row["detail"] = detail.json()
            return out
    finally:
        await web.state.spans.aclose()
        await store.close()


@pytest.mark.integration
async def test_a_workers_runs_show_in_the_studio_of_another_app(temporal_server: Any, tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    store = SQLiteStore(str(path))
    agent = Agent("echo", model=MockModel([text_step("hello")]))
    app = Sluicegate(agents={agent.id: agent}, storage=store)
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with kept_spans(app, ServerSettings()) as spans, create_worker(client, app, task_queue=queue):
        assert spans is not None
        runs = TemporalRuns(client, task_queue=queue)
        run_id = await runs.start(agent, "hi")
        await asyncio.wait_for(runs.result(run_id), 30)
    await store.close()

    traces = await _studio_traces(path, ServerSettings(studio=True, temporal_ui=UI))
    (run,) = [t for t in traces if t["durable"] and t["durable"]["workflowId"] == run_id]
    assert run["name"] == "invoke_agent echo"
    assert run["durable"]["namespace"] == "default"
    assert run["durable"]["taskQueue"] == queue
    assert run["durable"]["url"] == f"{UI}/namespaces/default/workflows/{run_id}"
    assert run["detail"]["durable"]["command"] == f"temporal workflow show -w {run_id}"
    assert any(s["name"].startswith("chat ") for s in run["detail"]["spans"]), run["detail"]["spans"]


async def test_a_worker_keeps_no_spans_when_storage_cannot_or_persisting_is_off(tmp_path: Path) -> None:
    async with kept_spans(Sluicegate(), ServerSettings()) as none:
        assert none is None
    store = SQLiteStore(str(tmp_path / "app.db"))
    try:
        async with kept_spans(Sluicegate(storage=store), ServerSettings(persist_traces=False)) as off:
            assert off is None
    finally:
        await store.close()


def test_the_web_ui_setting_takes_only_an_http_url(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (
        ServerSettings(temporal_ui="https://temporal.example/ui/").temporal_ui
        == "https://temporal.example/ui"
    )
    for bad in ("javascript:alert(1)", "ftp://host", "http://", "http://a b", "http://x/?q=1", 'http://x/"'):
        with pytest.raises(ConfigurationError, match="temporal_ui"):
            ServerSettings(temporal_ui=bad)
    monkeypatch.setenv("SLUICEGATE_TEMPORAL_UI", "data:text/html,hi")
    with pytest.raises(ConfigurationError, match="temporal_ui"):
        ServerSettings.from_env()


def test_serve_temporal_ui_sets_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from sluicegate.cli import build_parser
    from sluicegate.cli.serving import temporal_env

    # a private copy of the environment: a leaked SLUICEGATE_TEMPORAL would make later apps durable
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_TEMPORAL")}
    monkeypatch.setattr(os, "environ", environ)
    args = build_parser().parse_args(["serve", "app.py", "--temporal", "127.0.0.1:7233", "--temporal-ui", UI])
    temporal_env(args)
    assert environ["SLUICEGATE_TEMPORAL_UI"] == UI
    assert ServerSettings.from_env().temporal_ui == UI


@pytest.mark.integration
async def test_the_request_span_of_a_durable_route_names_the_workflow(
    temporal_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # only this test's provider records (an earlier test may have set a global one)
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: NoOpTracerProvider())
    setup = configure(in_memory=True, set_global=False)
    agent = Agent("echo", model=MockModel([text_step("hello")]))
    app = Sluicegate(agents={agent.id: agent})
    queue = f"q-{uuid.uuid4()}"
    monkeypatch.setenv("SLUICEGATE_TEMPORAL", temporal_server.target)
    monkeypatch.setenv("SLUICEGATE_TEMPORAL_TASK_QUEUE", queue)
    server = create_app(app, ServerSettings())
    client = await Client.connect(temporal_server.target)
    try:
        async with (
            create_worker(client, app, task_queue=queue),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=server), base_url="http://t", timeout=60
            ) as http,
        ):
            # stands in for an instrumented server's request span (the route runs in its context)
            with setup.tracer_provider.get_tracer("server").start_as_current_span("POST generate echo"):
                answer = await http.post("/api/agents/echo/generate", json={"messages": "hi"})
        assert answer.status_code == 200, answer.text
        (request,) = [s for s in setup.spans() if s.name == "POST generate echo"]
        assert request.attributes[DURABLE_WORKFLOW_ID] == answer.headers["x-sluicegate-workflow-id"]
        assert request.attributes[DURABLE_NAMESPACE] == "default"
        assert request.attributes[DURABLE_TASK_QUEUE] == queue
    finally:
        setup.shutdown()


def test_sluicegate_worker_writes_its_runs_spans_when_it_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI wraps the worker in the span keeping: a run span ended while the worker runs is in
    the app's storage once it has stopped (the Temporal worker itself is stood in for)."""
    from sluicegate import cli
    from sluicegate.durable.temporal import worker

    db = tmp_path / "app.db"
    app_file = tmp_path / "app.py"
    app_file.write_text(
        "from sluicegate import Sluicegate\nfrom sluicegate.storage import SQLiteStore\n"
        f"app = Sluicegate(storage=SQLiteStore({str(db)!r}))\n"
    )
    ran: list[str] = []

    async def fake_run_worker(app: Any, target: str, **options: Any) -> None:
        with trace.get_tracer("test").start_as_current_span(
            "invoke_agent echo", attributes={DURABLE_WORKFLOW_ID: "run-cli"}
        ):
            ran.append(target)

    monkeypatch.setattr(worker, "run_worker", fake_run_worker)
    monkeypatch.setattr(worker, "exit_worker_process", lambda code=0: None)
    monkeypatch.setenv("SLUICEGATE_TRACE_CAPACITY", "5")
    assert cli.main(["worker", str(app_file), "--temporal", "127.0.0.1:1"]) is None
    assert ran == ["127.0.0.1:1"]

    async def stored() -> list[Any]:
        store = SQLiteStore(str(db))
        try:
            return await store.recent_trace_spans(5)
        finally:
            await store.close()

    spans = asyncio.run(stored())
    assert [s.record["attributes"].get(DURABLE_WORKFLOW_ID) for s in spans] == ["run-cli"]


@pytest.mark.integration
async def test_a_span_store_with_no_loop_yet_does_not_fail_a_workflow(
    temporal_server: Any, tmp_path: Path
) -> None:
    """A studio's `RecentSpans` that has not synced yet (no writer loop) sees a run's spans end in
    workflow code, on the workflow's own loop: it must not adopt that loop (whose `is_closed`
    raises), and the run completes; the spans are written at the next sync."""
    store = SQLiteStore(str(tmp_path / "app.db"))
    spans = install_recent_spans(10, store=store)
    agent = Agent("echo", model=MockModel([text_step("hello")]))
    app = Sluicegate(agents={agent.id: agent})
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    try:
        async with create_worker(client, app, task_queue=queue):
            runs = TemporalRuns(client, task_queue=queue, settings={"workflowTaskTimeout": 2})
            run_id = await runs.start(agent, "hi")
            result = await asyncio.wait_for(runs.result(run_id), 20)
        assert result["text"] == "hello"
        await spans.sync()
        stored = await store.recent_trace_spans(10)
        assert run_id in {s.record["attributes"].get(DURABLE_WORKFLOW_ID) for s in stored}
    finally:
        await spans.aclose()
        await store.close()
