"""The routes Mastra's Studio needs beyond client-js: CORS it accepts, auth capabilities,
providers, memory views, Mastra's stream body fields, observability over kept spans, and the
empty answers for features sluicegate does not have."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluicegate import Agent, Sluicegate
from sluicegate.identity import Identity
from sluicegate.memory import Memory
from sluicegate.processors import PIIDetector, RegexFilter
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.settings import cors_options
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel

STUDIO = "http://localhost:3000"


def _registry(**extra: Any) -> Sluicegate:
    storage = SQLiteStore(":memory:")
    pii = PIIDetector(strategy="redact", redaction_method="placeholder", detection_types=["email"])
    forbidden = RegexFilter(rules=[{"name": "forbidden", "pattern": r"(?i)\bforbidden\b"}])
    guarded = Agent(
        name="guarded", model=EchoModel(deltas=2), input_processors=[pii, forbidden], max_retries=2
    )
    remembering = Agent(
        name="remembering",
        model=EchoModel(deltas=2),
        memory=Memory(
            storage=storage,
            options={
                "last_messages": 5,
                "working_memory": {"enabled": True, "scope": "thread", "template": "# Notes"},
            },
        ),
    )
    return Sluicegate(
        agents={"guarded": guarded, "remembering": remembering},
        processors=[pii, forbidden],
        storage=storage,
        **extra,
    )


@pytest.fixture
def make() -> Iterator[Any]:
    clients: list[TestClient] = []

    def build(registry: Sluicegate | None = None, **settings: Any) -> TestClient:
        client = TestClient(create_app(registry or _registry(), ServerSettings(**settings)))
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


def _chunks(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


# ----------------------------------------------------------------------------- connect


def test_studio_preflight_is_allowed_with_credentials(make: Any) -> None:
    client = make(cors_origins=(STUDIO,))
    answer = client.options(
        "/api/auth/capabilities",
        headers={
            "origin": STUDIO,
            "access-control-request-method": "GET",
            "access-control-request-headers": "x-mastra-dev-playground,x-mastra-client-type,content-type",
        },
    )
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == STUDIO
    assert answer.headers["access-control-allow-credentials"] == "true"
    other = client.options(
        "/api/agents", headers={"origin": "http://evil.example", "access-control-request-method": "GET"}
    )
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers


def test_wildcard_origin_never_allows_credentials() -> None:
    assert cors_options(("*",))["allow_credentials"] is False
    assert cors_options((STUDIO,))["allow_credentials"] is True


def test_dev_allows_the_studio_origin_by_default_and_serve_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """`dev` allows any loopback origin (Studio's :3000 among them), on top of any named;
    `serve` only the named ones."""
    from sluicegate import cli

    seen: dict[str, Any] = {}

    def fake_serve(*args: Any, **kwargs: Any) -> int:
        settings = ServerSettings.from_env()
        seen["origins"], seen["loopback"] = settings.cors_origins, settings.cors_loopback
        return 0

    monkeypatch.setattr(cli.serving, "serve", fake_serve)
    for name in ("SLUICEGATE_CORS_ORIGINS", "SLUICEGATE_CORS_LOOPBACK", "SLUICEGATE_ALLOW_CLIENT_OVERRIDES"):
        monkeypatch.setenv(name, "")  # restored after the test: `dev` sets them
        monkeypatch.delenv(name)
    cli.main(["serve", "app.py"])
    assert seen == {"origins": (), "loopback": False}
    cli.main(["dev", "app.py"])
    assert seen == {"origins": (), "loopback": True}
    monkeypatch.setenv("SLUICEGATE_CORS_ORIGINS", "https://mine.example")
    cli.main(["dev", "app.py"])
    assert seen == {"origins": ("https://mine.example",), "loopback": True}
    assert cors_options((), loopback=True)["allow_origin_regex"] is not None
    assert STUDIO.startswith("http://localhost:")


def test_auth_capabilities_reflect_token_and_identity(make: Any) -> None:
    assert make().get("/api/auth/capabilities").json() == {"enabled": False, "login": None}
    tokened = make(api_token="s3cret")
    assert tokened.get("/api/auth/capabilities").status_code == 401
    answer = tokened.get("/api/auth/capabilities", headers={"authorization": "Bearer s3cret"}).json()
    assert answer == {"enabled": True, "login": None}
    assert "s3cret" not in json.dumps(answer)
    identified = make(_registry(resolve_identity=lambda request: Identity(resource_id="ada")))
    answer = identified.get("/api/auth/capabilities").json()
    assert answer["enabled"] is True and answer["user"] == {"id": "ada"}
    assert answer["capabilities"]["user"] is True and answer["capabilities"]["rbac"] is False
    assert identified.get("/api/auth/me").json() == {"id": "ada"}


def test_providers_report_key_presence_never_values(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-leak")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    answer = make().get("/api/agents/providers")
    assert answer.status_code == 200
    providers = {p["id"]: p for p in answer.json()["providers"]}
    assert "sk-do-not-leak" not in answer.text
    assert providers["openai"]["connected"] is True and providers["openai"]["envVar"] == "OPENAI_API_KEY"
    assert providers["anthropic"]["connected"] is False
    assert providers["echo"]["models"] == ["echo-1"]  # what the app's agents use


# ----------------------------------------------------------------------------- chat bodies


def test_stream_takes_studios_body(make: Any) -> None:
    """The body Studio 1.31 sends, for an agent without memory: the memory option is dropped
    with a warning chunk, and no thread is created."""
    client = make()
    body = {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "mail ada@example.com"}]}],
        "runId": "r-1",
        "maxSteps": 5,
        "untilIdle": True,
        "modelSettings": {"maxRetries": 1},
        "requestContext": {},
        "memory": {"thread": "t-guarded", "resource": "guarded"},
    }
    answer = client.post("/api/agents/guarded/stream", json=body)
    assert answer.status_code == 200, answer.text
    chunks = _chunks(answer.text)
    assert chunks[0]["type"] == "warning" and "no memory" in chunks[0]["payload"]["message"]
    text = "".join(c["payload"].get("text", "") for c in chunks if c["type"] == "text-delta")
    assert "[EMAIL]" in text and "ada@example.com" not in text
    assert client.get("/api/memory/threads/t-guarded").status_code == 404
    generated = client.post("/api/agents/guarded/generate", json={**body, "untilIdle": {"maxIdleMs": 100}})
    assert generated.status_code == 200
    assert any("no memory" in w["message"] for w in generated.json()["warnings"])


def test_a_memory_agent_keeps_memory_and_gets_no_warning(make: Any) -> None:
    client = make()
    body = {"messages": "hello", "memory": {"thread": "t-1", "resource": "ada"}, "untilIdle": False}
    chunks = _chunks(client.post("/api/agents/remembering/stream", json=body).text)
    assert all(c["type"] != "warning" for c in chunks)
    assert client.get("/api/memory/threads/t-1", params={"agentId": "remembering"}).status_code == 200


def test_stream_message_id_is_the_stored_id(make: Any) -> None:
    client = make()
    body = {"messages": "remember me", "memory": {"thread": "t-ids", "resource": "ada"}}
    chunks = _chunks(client.post("/api/agents/remembering/stream", json=body).text)
    announced = [c["payload"]["messageId"] for c in chunks if c["type"] == "step-start"]
    stored = client.get("/api/memory/threads/t-ids/messages", params={"agentId": "remembering"}).json()
    assistant = [m["id"] for m in stored["messages"] if m["role"] == "assistant"]
    assert announced == assistant and len(assistant) == 1


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"modelSettings": {"maxRetries": 3}}, "modelSettings.maxRetries"),  # above the agent's 2
        ({"modelSettings": {"maxRetries": -1}}, "modelSettings.maxRetries"),
        ({"untilIdle": {"maxIdleMs": 0}}, "untilIdle"),
        ({"context": [{"role": "user", "content": "x"}]}, "context"),
        ({"versions": {"defaultStatus": "draft"}}, "versions"),
        ({"toolsets": {"x": {}}}, "toolsets"),
        ({"scorers": {"s": {"scorer": "x"}}}, "scorers"),
        ({"output": {"type": "object"}, "structuredOutput": {"schema": {"type": "object"}}}, "output"),
        ({"notAMastraField": 1}, "notAMastraField"),
    ],
)
def test_bodies_refuse_what_cannot_be_honoured(make: Any, extra: dict[str, Any], field: str) -> None:
    answer = make().post("/api/agents/guarded/stream", json={"messages": "hi", **extra})
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"].startswith(field)


def test_max_retries_narrows_the_agents_retries(make: Any) -> None:
    from sluicegate.server.bodies import AgentCallBody, call_options, narrow_retries

    registry = _registry()
    body = AgentCallBody.model_validate(
        {"messages": "hi", "modelSettings": {"maxRetries": 0, "temperature": 0.2}}
    )
    _, options = call_options(body, ServerSettings())
    narrow_retries(registry.agents["guarded"], options)
    assert options["max_retries"] == 0
    assert options["model_settings"] == {"temperature": 0.2}


# ----------------------------------------------------------------------------- memory views


def test_memory_status_and_config(make: Any) -> None:
    client = make()
    status = client.get("/api/memory/status", params={"agentId": "remembering"}).json()
    assert status == {"result": True, "memoryType": "local"}
    assert client.get("/api/memory/status", params={"agentId": "guarded"}).json() == {"result": False}
    assert client.get("/api/memory/status", params={"agentId": "nobody"}).status_code == 404
    config = client.get("/api/memory/config", params={"agentId": "remembering"}).json()["config"]
    assert config["lastMessages"] == 5 and config["semanticRecall"] is False
    assert config["workingMemory"] == {"enabled": True, "scope": "thread", "template": "# Notes"}
    # Studio asks for agents without memory too: nothing to show, not an error.
    assert client.get("/api/memory/config", params={"agentId": "guarded"}).json() == {"config": None}
    none = client.get("/api/memory/threads/x/working-memory", params={"agentId": "guarded"}).json()
    assert none["workingMemory"] is None and none["threadExists"] is False


def test_working_memory_read_and_update(make: Any) -> None:
    client = make()
    client.post(
        "/api/memory/threads", params={"agentId": "remembering"}, json={"resourceId": "ada", "threadId": "w"}
    )
    url = "/api/memory/threads/w/working-memory"
    read = client.get(url, params={"agentId": "remembering", "resourceId": "ada"}).json()
    assert read["workingMemory"] is None and read["threadExists"] is True and read["source"] == "thread"
    assert read["workingMemoryTemplate"] == {"format": "markdown", "content": "# Notes"}
    update = {"workingMemory": "# Notes\nlikes tea", "resourceId": "ada"}
    assert client.post(url, params={"agentId": "remembering"}, json=update).json() == {"success": True}
    assert client.get(url, params={"agentId": "remembering"}).json()["workingMemory"] == "# Notes\nlikes tea"
    # Another resource's thread answers as an unknown one; an agent without it is refused.
    other = client.post(url, params={"agentId": "remembering"}, json={**update, "resourceId": "bob"})
    assert other.status_code == 404
    assert client.post(url, params={"agentId": "guarded"}, json=update).status_code == 400


def test_working_memory_is_never_enabled_by_a_request(make: Any) -> None:
    storage = SQLiteStore(":memory:")
    plain = Agent(name="plain", model=EchoModel(), memory=Memory(storage=storage))
    client = make(Sluicegate(agents={"plain": plain}, storage=storage))
    client.post(
        "/api/memory/threads", params={"agentId": "plain"}, json={"resourceId": "ada", "threadId": "p"}
    )
    answer = client.post(
        "/api/memory/threads/p/working-memory", params={"agentId": "plain"}, json={"workingMemory": "x"}
    )
    assert answer.status_code == 400 and answer.json()["field"] == "workingMemory"


# ----------------------------------------------------------------------------- observability


def _query(client: TestClient, **body: Any) -> Any:
    return client.post("/api/observability/traces/query", json=body)


def test_traces_from_kept_spans(make: Any) -> None:
    client = make(studio=True)
    client.post("/api/agents/guarded/stream", json={"messages": "mail ada@example.com"})
    client.post("/api/agents/guarded/stream", json={"messages": "this is forbidden"})
    answer = _query(client, orderBy=[{"field": "startedAt", "direction": "desc"}], page={"limit": 1})
    assert answer.status_code == 200
    first = answer.json()
    assert len(first["traces"]) == 1 and first["page"]["next"]
    tripped = first["traces"][0]
    assert (
        tripped["status"] == "error"
        and tripped["entityName"] == "guarded"
        and tripped["entityType"] == "agent"
    )
    second = _query(client, page={"limit": 5, "after": first["page"]["next"]}).json()
    assert [t["status"] for t in second["traces"]] == ["success"] and second["page"]["next"] is None

    spans = client.get(f"/api/observability/traces/{tripped['traceId']}").json()["spans"]
    processors = {s["attributes"]["processorId"]: s for s in spans if s["spanType"] == "processor_run"}
    assert processors["regex-filter"]["attributes"]["outcome"] == "abort"
    assert processors["regex-filter"]["error"]["name"] == "TripWire"
    assert processors["pii-detector"]["attributes"]["outcome"] == "pass"
    ok = client.get(f"/api/observability/traces/{second['traces'][0]['traceId']}").json()["spans"]
    model = next(s for s in ok if s["spanType"] == "model_generation")
    assert model["attributes"]["usage"]["totalTokens"] > 0
    assert any(s["attributes"].get("outcome") == "modified" for s in ok)  # the redaction
    span_id = model["spanId"]
    one = client.get(f"/api/observability/traces/{second['traces'][0]['traceId']}/spans/{span_id}")
    assert one.json()["span"]["spanId"] == span_id
    assert client.get("/api/observability/traces/" + "0" * 32).status_code == 404


def test_trace_query_filters_and_refuses_what_it_cannot_filter(make: Any) -> None:
    client = make(studio=True)
    client.post("/api/agents/guarded/stream", json={"messages": "this is forbidden"})
    client.post(
        "/api/agents/remembering/stream",
        json={"messages": "hi", "memory": {"thread": "q", "resource": "ada"}},
    )
    failed = {"op": "eq", "left": {"path": "status"}, "right": {"literal": "error"}}
    traces = _query(client, where=failed).json()["traces"]
    assert [t["entityName"] for t in traces] == ["guarded"]
    by_thread = {"op": "in", "value": {"path": "threadId"}, "set": ["q"]}
    assert [t["threadId"] for t in _query(client, where=by_thread).json()["traces"]] == ["q"]
    # The agent page's traces tab: runs with a span of that agent.
    of_agent = {
        "op": "and",
        "args": [
            {"op": "eq", "left": {"path": "entityType"}, "right": {"literal": "agent"}},
            {
                "spans": {
                    "some": {"op": "eq", "left": {"path": "entityId"}, "right": {"literal": "remembering"}}
                }
            },
        ],
    }
    assert [t["entityName"] for t in _query(client, where=of_agent).json()["traces"]] == ["remembering"]
    tripped = {
        "spans": {
            "some": {
                "op": "eq",
                "left": {"path": "name"},
                "right": {"literal": "processor regex-filter (input)"},
            }
        }
    }
    assert {t["entityName"] for t in _query(client, where=tripped).json()["traces"]} == {"guarded"}
    no_model = {
        "spans": {
            "none": {"op": "eq", "left": {"path": "spanType"}, "right": {"literal": "model_generation"}}
        }
    }
    assert [t["status"] for t in _query(client, where=no_model).json()["traces"]] == ["error"]
    scored = {"scores": {"some": {"op": "exists", "path": "score"}}}
    assert _query(client, where=scored).json()["traces"] == []  # no scores are kept
    metadata = {"spans": {"some": {"op": "exists", "path": "metadata.tenant"}}}
    refused = _query(client, where=metadata)
    assert refused.status_code == 422
    assert refused.json()["issues"][0]["path"] == ["where", "spans", "some", "path"]
    unknown = _query(client, where={"op": "eq", "left": {"path": "secret"}, "right": {"literal": 1}})
    assert unknown.status_code == 422
    assert _query(client, page={"after": "bogus"}).status_code == 400
    assert _query(client, nonsense=1).status_code == 400
    fields = client.post("/api/observability/traces/query/fields", json={"predicateScope": "trace"}).json()
    assert {f["path"] for f in fields["canonicalFields"]} >= {"status", "entityName", "threadId"}
    span_fields = client.post(
        "/api/observability/traces/query/fields", json={"predicateScope": "spans"}
    ).json()
    kinds = {f["path"]: f["valueKind"] for f in span_fields["canonicalFields"]}
    assert kinds["durationMs"] == "number" and kinds["error"] == "presence" and kinds["spanType"] == "string"
    scores = client.post("/api/observability/traces/query/fields", json={"predicateScope": "scores"}).json()
    assert scores["canonicalFields"] == []
    values = client.post(
        "/api/observability/traces/query/values", json={"predicateScope": "trace", "path": "entityName"}
    ).json()
    assert {v["value"] for v in values["values"]} == {"guarded", "remembering"}
    names = client.get("/api/observability/discovery/entity-names", params={"entityType": "agent"}).json()
    assert names == {"names": ["guarded", "remembering"]}


def test_an_identity_sees_only_its_own_runs(make: Any) -> None:
    def who(request: Any) -> Identity:
        return Identity(resource_id=request.headers.get("x-user", "ada"))

    client = make(_registry(resolve_identity=who), studio=True)
    client.post("/api/agents/guarded/stream", json={"messages": "hi"}, headers={"x-user": "ada"})
    client.post("/api/agents/guarded/stream", json={"messages": "hi"}, headers={"x-user": "bob"})
    mine = _query(client).json()["traces"]
    assert [t["resourceId"] for t in mine] == ["ada"]
    bob = client.post("/api/observability/traces/query", json={}, headers={"x-user": "bob"}).json()["traces"]
    assert [t["resourceId"] for t in bob] == ["bob"]
    assert client.get(f"/api/observability/traces/{bob[0]['traceId']}").status_code == 404  # as ada


def test_without_the_studio_no_traces_are_kept(make: Any) -> None:
    client = make()
    client.post("/api/agents/guarded/stream", json={"messages": "hi"})
    assert _query(client).json() == {"traces": [], "page": {"next": None}}
    assert client.get("/api/system/packages").json()["observabilityEnabled"] is False


# ----------------------------------------------------------------------------- absent features


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/api/workflows", {}),
        ("/api/scores/scorers", {}),
        ("/api/mcp/v0/servers", {"servers": [], "total_count": 0, "next": None}),
        ("/api/workspaces", {"workspaces": []}),
        ("/api/experiments/review-summary", {"counts": []}),
        ("/api/channels/platforms", []),
        ("/api/agents/guarded/voice/speakers", []),
        (
            "/api/observability/logs?page=2&perPage=10",
            {"logs": [], "pagination": {"total": 0, "page": 2, "perPage": 10, "hasMore": False}},
        ),
        (
            "/api/datasets",
            {"datasets": [], "pagination": {"total": 0, "page": 0, "perPage": 20, "hasMore": False}},
        ),
    ],
)
def test_absent_features_answer_mastras_empty_shapes(make: Any, path: str, expected: Any) -> None:
    answer = make().get(path)
    assert answer.status_code == 200 and answer.json() == expected


# ----------------------------------------------------------------------------- metrics


def _metric(client: TestClient, kind: str, **body: Any) -> Any:
    return client.post(f"/api/observability/metrics/{kind}", json=body)


def test_metrics_from_kept_runs(make: Any) -> None:
    client = make(studio=True)
    client.post("/api/agents/guarded/stream", json={"messages": "mail ada@example.com"})
    client.post("/api/agents/guarded/stream", json={"messages": "this is forbidden"})
    client.post(
        "/api/agents/remembering/stream",
        json={"messages": "hi", "memory": {"thread": "m", "resource": "ada"}},
    )
    runs = _metric(client, "aggregate", name=["mastra_agent_duration_ms"], aggregation="count")
    assert runs.json() == {"value": 3.0}
    by_status = _metric(
        client,
        "breakdown",
        name=["mastra_agent_duration_ms"],
        groupBy=["entityName", "status"],
        aggregation="count",
    ).json()["groups"]
    counted = {(g["dimensions"]["entityName"], g["dimensions"]["status"]): g["value"] for g in by_status}
    assert counted == {("guarded", "ok"): 1.0, ("guarded", "error"): 1.0, ("remembering", "ok"): 1.0}
    tokens = _metric(client, "aggregate", name="mastra_model_total_input_tokens", aggregation="sum").json()
    assert tokens["value"] > 0  # two model calls: the tripped run never reached the model
    threads = _metric(
        client,
        "aggregate",
        name=["mastra_agent_duration_ms"],
        aggregation="count_distinct",
        distinctColumn="threadId",
    )
    assert threads.json()["value"] == 1.0
    latency = _metric(
        client, "percentiles", name="mastra_agent_duration_ms", percentiles=[0.5, 0.95], interval="1h"
    )
    series = latency.json()["series"]
    assert [s["percentile"] for s in series] == [0.5, 0.95] and series[0]["points"][0]["value"] > 0
    over_time = _metric(
        client, "timeseries", name=["mastra_model_total_output_tokens"], aggregation="sum", interval="1h"
    ).json()["series"]
    assert (
        over_time[0]["name"] == "mastra_model_total_output_tokens" and over_time[0]["points"][0]["value"] > 0
    )


def test_metric_windows_and_refusals(make: Any) -> None:
    client = make(studio=True)
    client.post("/api/agents/guarded/stream", json={"messages": "hi"})
    past = {"timestamp": {"start": "2020-01-01T00:00:00Z", "end": "2020-01-02T00:00:00Z"}}
    body = {"name": ["mastra_agent_duration_ms"], "aggregation": "count"}
    assert _metric(client, "aggregate", **body, filters=past).json() == {"value": 0.0}
    now = {"timestamp": {"start": "2020-01-01T00:00:00Z", "end": "2100-01-01T00:00:00Z"}}
    compared = _metric(client, "aggregate", **body, filters=now, comparePeriod="previous_period").json()
    assert compared["value"] == 1.0 and compared["previousValue"] == 0.0 and compared["changePercent"] is None
    assert _metric(client, "aggregate", **body, filters={"entityName": "guarded"}).json()["value"] == 1.0
    assert _metric(client, "aggregate", **body, filters={"entityName": "other"}).json()["value"] == 0.0
    refused = _metric(client, "aggregate", **body, filters={"experimentId": "x"})
    assert refused.status_code == 400 and refused.json()["field"] == "filters.experimentId"
    assert _metric(client, "aggregate", name=["x"], aggregation="median").status_code == 400
    assert (
        _metric(client, "aggregate", **{**body, "aggregation": "count_distinct"}).json()["field"]
        == "distinctColumn"
    )
    assert _metric(client, "timeseries", **body, interval="soon").json()["field"] == "interval"
    assert _metric(client, "breakdown", **body, groupBy=["secret"]).json()["field"] == "groupBy.0"


def test_metrics_count_only_the_callers_runs(make: Any) -> None:
    def who(request: Any) -> Identity:
        return Identity(resource_id=request.headers.get("x-user", "ada"))

    client = make(_registry(resolve_identity=who), studio=True)
    for user in ("ada", "ada", "bob"):
        client.post("/api/agents/guarded/stream", json={"messages": "hi"}, headers={"x-user": user})
    body = {"name": ["mastra_agent_duration_ms"], "aggregation": "count"}
    assert _metric(client, "aggregate", **body).json()["value"] == 2.0
    bob = client.post("/api/observability/metrics/aggregate", json=body, headers={"x-user": "bob"})
    assert bob.json()["value"] == 1.0


def test_tokens_per_trace_as_the_trace_list_asks(make: Any) -> None:
    client = make(studio=True)
    client.post("/api/agents/guarded/stream", json={"messages": "hi"})
    client.post("/api/agents/guarded/stream", json={"messages": "hello again"})
    trace_id = _query(client).json()["traces"][0]["traceId"]
    groups = _metric(
        client,
        "breakdown",
        name=["mastra_model_total_input_tokens", "mastra_model_total_output_tokens"],
        aggregation="sum",
        groupBy=["traceId", "name"],
        filters={"traceIds": [trace_id]},
    ).json()["groups"]
    assert {g["dimensions"]["traceId"] for g in groups} == {trace_id}
    assert {g["dimensions"]["name"] for g in groups} == {
        "mastra_model_total_input_tokens",
        "mastra_model_total_output_tokens",
    }
