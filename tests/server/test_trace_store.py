"""Runs persist: the studio's spans are written to the app's storage (real SQLite and real
PostgreSQL), off the request path, bounded by count and age, and read back by a new app on the
same storage (a reload) and by every other instance, each caller still seeing only its runs."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import TracerProvider
from starlette.requests import Request

from sluicegate import Agent, Sluicegate
from sluicegate.errors import ConfigurationError
from sluicegate.processors import PIIDetector
from sluicegate.server import Identity, ServerSettings, create_app
from sluicegate.server.traces import AGENT_ID, RecentSpans
from sluicegate.storage import PostgresStore, SQLiteStore
from sluicegate.storage.span_store import StoredSpan
from sluicegate.testing.echo_model import EchoModel
from sluicegate.tracing import state as tracing_state

sys.path.insert(0, str(Path(__file__).parents[1] / "memory"))
from memory_pg_server import PostgresUnavailable, create_database, start_postgres


@pytest.fixture(scope="module")
def postgres_dsn() -> Iterator[str]:
    try:
        dsn, stop = start_postgres(in_memory=True)
    except PostgresUnavailable as error:
        if os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1":
            pytest.fail(str(error))
        pytest.skip(str(error))
    try:
        yield dsn
    finally:
        stop()


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """One storage location (a file, a database) shared by the stores a test opens."""
    if request.param == "postgres":
        dsn = request.getfixturevalue("postgres_dsn")
        return asyncio.run(create_database(dsn))
    return str(tmp_path / "app.db")


def open_store(location: str) -> Any:
    return PostgresStore(location) if location.startswith("postgres") else SQLiteStore(location)


def users(request: Request) -> Identity | None:
    user = request.headers.get("x-user")
    return None if user is None else Identity(resource_id=user)


def registry(location: str, *, identity: bool = False) -> Sluicegate:
    agent = Agent(name="echo", model=EchoModel(deltas=3), output_processors=[PIIDetector(llm="never")])
    return Sluicegate(
        agents={"echo": agent}, storage=open_store(location), resolve_identity=users if identity else None
    )


def run(client: TestClient, text: str = "hello there", headers: dict[str, str] | None = None) -> str:
    response = client.post("/api/agents/echo/generate", json={"messages": text}, headers=headers or {})
    assert response.status_code == 200, response.text
    return response.headers["x-sluicegate-trace-id"]


def studio(location: str, **settings: Any) -> Callable[..., TestClient]:
    return lambda **kw: TestClient(
        create_app(registry(location, **kw), ServerSettings(studio=True, **settings))
    )


def listed(client: TestClient, headers: dict[str, str] | None = None) -> list[str]:
    response = client.get("/api/studio/traces", headers=headers or {})
    assert response.status_code == 200, response.text
    return [t["traceId"] for t in response.json()]


def test_runs_survive_a_new_app_on_the_same_storage(location: str) -> None:
    with studio(location)() as first:
        trace_id = run(first, "mail bob@example.com please")
        assert trace_id in listed(first)
    # a reload: a new app, new stores, the same file or database
    with studio(location)() as second:
        assert trace_id in listed(second)
        view = second.get(f"/api/studio/traces/{trace_id}").json()
        decisions = {(d["processorId"], d["phase"]): d["outcome"] for d in view["processors"]}
        assert decisions[("pii-detector", "output_stream")] == "modified"
        stream = next(s for s in view["spans"] if s["name"] == "processor pii-detector output_stream")
        assert stream["events"] == [
            {
                "name": "sluicegate.redaction",
                "attributes": {"sluicegate.redaction.kind": "email", "sluicegate.redaction.count": 1},
            }
        ]


def test_every_instance_shows_the_runs_of_the_others(location: str) -> None:
    make = studio(location)
    with make() as one, make() as two:
        first = run(one)
        second = run(two)
        # each instance's background writer stores its run within a flush interval (1 s)
        for client in (one, two):
            deadline = time.monotonic() + 5
            while not {first, second} <= set(listed(client)):
                assert time.monotonic() < deadline, "the other instance's run never showed"
                time.sleep(0.1)


def test_a_reloaded_app_shows_a_caller_only_its_own_runs(location: str) -> None:
    alice, bob = {"x-user": "alice"}, {"x-user": "bob"}
    make = studio(location)
    with make(identity=True) as first:
        mine, bobs = run(first, headers=alice), run(first, headers=bob)
        listed(first, alice)  # writes what is pending
    with make(identity=True) as second:
        shown = listed(second, alice)
        assert mine in shown and bobs not in shown
        assert second.get(f"/api/studio/traces/{bobs}", headers=alice).status_code == 404
        assert second.get(f"/api/studio/traces/{bobs}", headers=bob).status_code == 200


def test_the_app_keeps_only_the_newest_runs(location: str) -> None:
    make = studio(location, trace_capacity=2)
    with make() as first:
        ids = [run(first) for _ in range(4)]
        listed(first)
    with make() as second:
        assert listed(second) == list(reversed(ids[2:]))


def test_content_is_stored_only_when_captured(location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracing_state.STATE, "capture_content", False)
    monkeypatch.setattr(tracing_state.STATE, "capture_changes", False)
    with studio(location)() as plain:
        quiet = run(plain, "a secret question")
        listed(plain)
    with studio(location, capture_content=True)() as dev:
        loud = run(dev, "a loud question")
        listed(dev)

    async def records(trace_id: str) -> str:
        store = open_store(location)
        try:
            return repr([s.record for s in await store.trace_spans(trace_id)])
        finally:
            await store.close()

    assert "secret question" not in asyncio.run(records(quiet))
    assert "loud question" in asyncio.run(records(loud))


# ---------------------------------------------------------------------- the store's contract


def span(trace: int, index: int, start_s: float, **kw: Any) -> StoredSpan:
    return StoredSpan(
        trace_id=f"{trace:032x}",
        span_id=f"{index + 1:016x}",
        start_ns=int(start_s * 1e9),
        record={"name": f"s{index}", "n": index},
        **kw,
    )


@pytest.fixture
async def store(location: str) -> AsyncIterator[Any]:
    opened = open_store(location)
    yield opened
    await opened.close()


async def test_the_store_prunes_by_count_and_age(store: Any) -> None:
    now = datetime(2026, 1, 10, tzinfo=UTC)
    base = now.timestamp()
    days = 86_400
    await store.save_spans([span(t, i, base - (10 - t) * days + i) for t in range(1, 6) for i in range(2)])
    assert await store.prune_spans(max_traces=3, max_age=timedelta(days=30), now=now) == 2
    kept = {s.trace_id for s in await store.recent_trace_spans(10)}
    assert kept == {f"{t:032x}" for t in (3, 4, 5)}
    # traces 3 and 4 started 7 and 6 days ago
    assert await store.prune_spans(max_traces=10, max_age=timedelta(days=5, hours=12), now=now) == 2
    assert {s.trace_id for s in await store.recent_trace_spans(10)} == {f"{5:032x}"}
    assert len(await store.trace_spans(f"{5:032x}")) == 2


async def test_spans_are_written_once_and_read_in_write_order(store: Any) -> None:
    first = [span(1, 0, 100.0, agent_id="echo"), span(1, 1, 101.0)]
    await store.save_spans(first)
    await store.save_spans([span(1, 0, 100.0), span(2, 0, 50.0, resource_id="alice")])  # a repeat
    spans = await store.spans_since(0)
    assert [(s.trace_id[-1], s.span_id[-1]) for s in spans] == [("1", "1"), ("1", "2"), ("2", "1")]
    assert spans[0].record == {"name": "s0", "n": 0} and spans[0].agent_id == "echo"
    assert await store.spans_since(spans[1].seq) == spans[2:]
    assert await store.latest_span_seq() == spans[2].seq
    assert [s.span_id for s in await store.recent_trace_spans(1)] == [f"{1:016x}", f"{2:016x}"]


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"trace_id": "xyz"}, "trace_id"),
        ({"trace_id": "A" * 32}, "trace_id"),
        ({"span_id": "123"}, "span_id"),
        ({"start_ns": -1}, "start_ns"),
    ],
)
async def test_a_bad_span_is_refused_naming_the_field_and_nothing_is_written(
    store: Any, bad: dict[str, Any], field: str
) -> None:
    good = span(1, 0, 1.0)
    wrong = StoredSpan(
        **{**{f: getattr(good, f) for f in ("trace_id", "span_id", "start_ns", "record")}, **bad}
    )
    with pytest.raises(ValueError, match=field):
        await store.save_spans([span(3, 0, 1.0), wrong])
    assert await store.spans_since(0) == []


async def test_bounds_must_be_positive(store: Any) -> None:
    with pytest.raises(ValueError, match="max_traces"):
        await store.prune_spans(max_traces=0, max_age=timedelta(days=1))
    with pytest.raises(ValueError, match="max_age"):
        await store.prune_spans(max_traces=1, max_age=timedelta(0))


# ---------------------------------------------------------------------- off the request path


class RecordingStore:
    """A span store in memory that can be made to fail, counting its calls."""

    def __init__(self) -> None:
        self.saved: list[StoredSpan] = []
        self.fail = False

    async def save_spans(self, spans: Sequence[StoredSpan]) -> None:
        if self.fail:
            raise OSError("disk full")
        self.saved.extend(spans)

    async def spans_since(self, seq: int, limit: int = 5000) -> list[StoredSpan]:
        return []

    async def latest_span_seq(self) -> int:
        return 0

    async def recent_trace_spans(self, max_traces: int) -> list[StoredSpan]:
        return []

    async def trace_spans(self, trace_id: str) -> list[StoredSpan]:
        return []

    async def prune_spans(self, *, max_traces: int, max_age: timedelta, now: datetime | None = None) -> int:
        return 0


def spans_of_one_run(recent: RecentSpans) -> None:
    provider = TracerProvider()
    provider.add_span_processor(recent)
    tracer = provider.get_tracer("test")
    with (
        tracer.start_as_current_span("invoke_agent echo", attributes={AGENT_ID: "echo"}),
        tracer.start_as_current_span("chat echo-1"),
    ):
        pass


async def test_ending_a_span_never_waits_on_storage_and_a_failed_write_loses_nothing() -> None:
    store = RecordingStore()
    recent = RecentSpans(store=store, flush_interval=3600)
    started = time.perf_counter()
    spans_of_one_run(recent)
    assert time.perf_counter() - started < 0.5
    assert store.saved == []  # nothing written while the run ran: the writer batches later
    store.fail = True
    with pytest.raises(OSError):
        await recent.sync()
    store.fail = False
    await recent.sync()
    assert [s.record["name"] for s in store.saved] == ["chat echo-1", "invoke_agent echo"]
    await recent.aclose()


async def test_the_background_writer_writes_without_being_asked() -> None:
    store = RecordingStore()
    recent = RecentSpans(store=store, flush_interval=0.05)
    spans_of_one_run(recent)  # on the event loop: starts the writer
    for _ in range(100):
        if len(store.saved) == 2:
            break
        await asyncio.sleep(0.02)
    assert len(store.saved) == 2
    await recent.aclose()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SLUICEGATE_TRACE_MAX_AGE", "a week"),
        ("SLUICEGATE_TRACE_MAX_AGE", "0"),
        ("SLUICEGATE_TRACE_CAPACITY", "0"),
        ("SLUICEGATE_PERSIST_TRACES", "maybe"),
        ("SLUICEGATE_CAPTURE_CONTENT", "2"),
    ],
)
def test_bad_trace_settings_are_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=name):
        ServerSettings.from_env()


def test_trace_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICEGATE_TRACE_MAX_AGE", "3600")
    monkeypatch.setenv("SLUICEGATE_TRACE_CAPACITY", "50")
    monkeypatch.setenv("SLUICEGATE_PERSIST_TRACES", "0")
    monkeypatch.setenv("SLUICEGATE_CAPTURE_CONTENT", "yes")
    settings = ServerSettings.from_env()
    assert (settings.trace_max_age, settings.trace_capacity) == (3600.0, 50)
    assert settings.persist_traces is False and settings.capture_content is True


def test_an_app_without_storage_keeps_its_runs_in_its_trace_db(tmp_path: Path) -> None:
    def make(trace_db: str | None) -> TestClient:
        agent = Agent(name="echo", model=EchoModel(deltas=3))
        settings = ServerSettings(studio=True, trace_db=trace_db)
        return TestClient(create_app(Sluicegate(agents={"echo": agent}), settings))

    path = str(tmp_path / ".sluicegate" / "traces.db")  # what `sluicegate dev` sets
    with make(path) as first:
        kept = run(first)
    with make(None) as memory_only:
        lost = run(memory_only)
    with make(path) as second:
        shown = listed(second)
        assert kept in shown and lost not in shown


EXAMPLE = str(Path(__file__).parent / "example_app.py")


@pytest.mark.parametrize(("command", "dev"), [("dev", True), ("serve", False)])
def test_dev_captures_content_and_keeps_runs_beside_the_app(
    monkeypatch: pytest.MonkeyPatch, command: str, dev: bool
) -> None:
    import uvicorn

    from sluicegate.cli import main
    from sluicegate.server.loader import APP_ENV

    for name in ("SLUICEGATE_CAPTURE_CONTENT", "SLUICEGATE_TRACE_DB", "SLUICEGATE_STUDIO", APP_ENV):
        monkeypatch.setenv(name, "")  # so that what the command sets is undone afterwards
        monkeypatch.delenv(name)
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: None)
    assert main([command, EXAMPLE]) == 0
    settings = ServerSettings.from_env()
    assert settings.capture_content is dev
    expected = str(Path(EXAMPLE).resolve().parent / ".sluicegate" / "traces.db") if dev else None
    assert settings.trace_db == expected


def test_a_started_app_reads_the_stored_runs_before_any_studio_request(location: str) -> None:
    with studio(location)() as first:
        trace_id = run(first)
    with studio(location)() as second:  # only started: nothing asked the studio yet
        recent = second.app.state.spans
        assert trace_id in recent.trace_ids()  # what other readers (observability routes) see
        assert recent.spans(trace_id)
