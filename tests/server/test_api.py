"""The HTTP API in Mastra's wire format: routes, bodies, stream framing and errors."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from tests.server.helpers import sse_events

from sluicegate.server import ServerSettings


def test_lists_agents_in_mastras_shape(client: TestClient) -> None:
    agents = client.get("/api/agents").json()
    assert sorted(agents) == ["echo", "plain"]
    echo = agents["echo"]
    assert echo["inputProcessors"] == [
        {"id": "unicode-normalizer", "name": "Unicode Normalizer"},
        {"id": "block-word", "name": "Block word"},
    ]
    assert echo["provider"] == "echo" and echo["modelId"] == "echo-1"
    assert echo["tools"]["add"]["id"] == "add"
    assert '"json"' in echo["tools"]["add"]["inputSchema"]
    assert echo["supportsMemory"] is True and agents["plain"]["supportsMemory"] is False


def test_generate_returns_full_output(client: TestClient) -> None:
    response = client.post(
        "/api/agents/echo/generate", json={"messages": [{"role": "user", "content": "hi"}]}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["text"].startswith("Echo: hi")
    assert body["finishReason"] == "stop"
    assert body["usage"]["totalTokens"] == body["usage"]["inputTokens"] + body["usage"]["outputTokens"]
    assert body["steps"][0]["text"] == body["text"]
    assert "tripwire" not in body


def test_generate_tripwire(client: TestClient) -> None:
    body = client.post("/api/agents/echo/generate", json={"messages": "a forbidden word"}).json()
    assert body["tripwire"] == {  # as Mastra: no `retry` on a tripwire that asks for none
        "reason": "The word 'forbidden' is not allowed",
        "metadata": {"word": "forbidden"},
        "processorId": "block-word",
    }
    assert body["finishReason"] == "other"
    assert body["text"] == ""


def test_stream_framing(client: TestClient) -> None:
    response = client.post("/api/agents/echo/stream", json={"messages": "stream this"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events, done = sse_events(response.text)
    assert done
    types = [e["type"] for e in events]
    assert types[0] == "start" and types[-1] == "finish"
    assert types.count("text-delta") == 5
    assert all(e["from"] == "AGENT" and e["runId"] == events[0]["runId"] for e in events)
    text = "".join(e["payload"]["text"] for e in events if e["type"] == "text-delta")
    assert text.startswith("Echo: stream this")
    assert events[-1]["payload"]["stepResult"]["reason"] == "stop"


def test_stream_tripwire_chunk(client: TestClient) -> None:
    events, done = sse_events(client.post("/api/agents/echo/stream", json={"messages": "forbidden"}).text)
    assert done
    # As Mastra: input processors run before `start`, so their tripwire is the only event.
    assert [e["type"] for e in events] == ["tripwire"]
    assert events[0]["payload"]["processorId"] == "block-word"
    assert "retry" not in events[0]["payload"]


def test_body_fields_map_to_call_options(client: TestClient, example: Any) -> None:
    body = {
        "messages": "hello",
        "memory": {"thread": {"id": "t-map"}, "resource": "u-map"},
        "maxSteps": 2,
        "toolChoice": {"type": "tool", "toolName": "add"},
        "activeTools": ["add"],
        "requestContext": {"tenant": "acme"},
    }
    assert client.post("/api/agents/echo/generate", json=body).status_code == 200
    threads = client.get("/api/memory/threads", params={"resourceId": "u-map", "agentId": "echo"}).json()
    assert [t["id"] for t in threads["threads"]] == ["t-map"]


def test_malformed_json_is_400(client: TestClient) -> None:
    response = client.post(
        "/api/agents/echo/generate", content=b'{"messages": ', headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["field"] == "body"
    assert "JSON" in response.json()["error"]


def test_bad_fields_name_the_field(client: TestClient) -> None:
    cases = [
        ({"messages": "x", "maxSteps": "many"}, "maxSteps"),
        ({"messages": "x", "maxSteps": 0}, "maxSteps"),
        ({"messages": "x", "maxSteps": 10_000}, "maxSteps"),
        ({"messages": "x", "unknownOption": 1}, "unknownOption"),
        ({"maxSteps": 1}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages"),
        ({"messages": "x", "memory": {"resource": "u"}}, "memory.thread"),
        (
            {"messages": "x", "requestContext": {"mastra__resourceId": "someone-else"}},
            "requestContext.mastra__resourceId",
        ),
        ({"messages": "x", "model": "openai/gpt-5"}, "model"),
        ({"messages": "x", "clientTools": {"t": {}}}, "clientTools"),
        ({"messages": "x", "toolChoice": "sometimes"}, "toolChoice"),
    ]
    for body, field in cases:
        response = client.post("/api/agents/echo/generate", json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["field"] == field, (body, response.json())


def test_memory_on_agent_without_memory_is_ignored_with_a_warning(client: TestClient) -> None:
    """As Mastra's Studio sends it for every agent: the option never turns memory on."""
    response = client.post(
        "/api/agents/plain/generate", json={"messages": "x", "memory": {"thread": "t", "resource": "u"}}
    )
    assert response.status_code == 200
    assert any("no memory" in warning["message"] for warning in response.json()["warnings"])
    assert client.get("/api/memory/threads/t").status_code == 404


def test_thread_of_another_resource_is_not_available(client: TestClient) -> None:
    client.post(
        "/api/agents/echo/generate",
        json={"messages": "x", "memory": {"thread": "owned", "resource": "alice"}},
    )
    response = client.post(
        "/api/agents/echo/generate",
        json={"messages": "x", "memory": {"thread": "owned", "resource": "mallory"}},
    )
    assert response.status_code == 409
    assert "alice" not in response.text
    hidden = client.get("/api/memory/threads/owned", params={"agentId": "echo", "resourceId": "mallory"})
    assert hidden.status_code == 404


def test_unknown_ids_are_404(client: TestClient) -> None:
    assert client.get("/api/agents/nobody").status_code == 404
    assert client.post("/api/agents/nobody/stream", json={"messages": "x"}).status_code == 404
    assert client.get("/api/processors/nothing").status_code == 404
    assert client.post("/api/tools/nothing/execute", json={"data": {}}).status_code == 404
    assert client.get("/api/memory/threads/none", params={"agentId": "echo"}).status_code == 404
    assert client.get("/api/nowhere").status_code == 404


def test_oversized_body_is_413(make_client: Any) -> None:
    client = make_client(ServerSettings(max_body_bytes=1000))
    response = client.post("/api/agents/echo/generate", json={"messages": "x" * 2000})
    assert response.status_code == 413
    # Without a Content-Length the limit holds while reading.
    chunks = (b"x" * 500 for _ in range(5))
    response = client.post(
        "/api/agents/echo/generate", content=chunks, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


def test_bearer_auth(make_client: Any) -> None:
    client = make_client(ServerSettings(api_token="s3cret"))
    assert client.get("/api/agents").status_code == 401
    assert client.get("/api/agents", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/api/agents", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert client.get("/openapi.json").status_code == 200


def test_cors(make_client: Any) -> None:
    client = make_client(ServerSettings(cors_origins=("https://app.example",)))
    preflight = client.options(
        "/api/agents/echo/stream",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,authorization",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    other = client.get("/api/agents", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_processors_catalogue_and_execute(client: TestClient) -> None:
    catalogue = client.get("/api/processors").json()
    assert catalogue["block-word"]["phases"] == ["input"]
    assert catalogue["block-word"]["configurations"] == [{"agentId": "echo", "type": "input"}]
    detail = client.get("/api/processors/unicode-normalizer").json()
    assert detail["configurations"] == [{"agentId": "echo", "agentName": "echo", "type": "input"}]
    ok = client.post(
        "/api/processors/unicode-normalizer/execute",
        json={
            "phase": "input",
            "messages": [{"id": "m1", "role": "user", "content": "ｆｕｌｌ　ｗｉｄｔｈ"}],
        },
    ).json()
    assert ok["success"] is True
    assert ok["messages"][0]["content"]["parts"][0]["text"] == "full width"
    blocked = client.post(
        "/api/processors/block-word/execute",
        json={"phase": "input", "messages": [{"id": "m1", "role": "user", "content": "forbidden"}]},
    ).json()
    assert blocked["success"] is False
    assert blocked["tripwire"]["triggered"] is True
    wrong = client.post("/api/processors/block-word/execute", json={"phase": "outputResult", "messages": []})
    assert wrong.status_code == 400 and wrong.json()["field"] == "phase"


def test_every_hook_a_processor_implements_is_listed() -> None:
    """The catalogue names every hook, `process_tool_call` included (the base class's list)."""
    from sluicegate.processors import PIIDetector, UnicodeNormalizer
    from sluicegate.server.serialize import processor_hooks

    hooks = processor_hooks(PIIDetector(strategy="pseudonymize", pseudonym_key=b"k" * 32))
    assert "process_tool_call" in hooks and "process_tool_result" in hooks
    assert processor_hooks(UnicodeNormalizer()) == ["process_input"]


def test_the_catalogue_lists_the_context_and_model_processors() -> None:
    """ContextCompactor and ModelSelectionProcessor on the studio's processor pages."""
    from sluicegate import Agent, Sluicegate
    from sluicegate.processors import ContextCompactor, ModelSelectionProcessor
    from sluicegate.server.serialize import processor_summary
    from sluicegate.testing import MockModel

    compactor = ContextCompactor(model=MockModel([]), trigger_tokens=1000)
    selector = ModelSelectionProcessor(
        model=MockModel([]),
        choices=[
            {"model": "openai/gpt-5-nano", "criteria": "small"},
            {"model": "openai/gpt-5", "criteria": "big"},
        ],
    )
    app = Sluicegate(agents=[Agent("a", model=MockModel([]), input_processors=[selector, compactor])])
    compacting = processor_summary(app, "context-compactor", compactor)
    assert compacting["hooks"] == ["process_llm_request"] and compacting["agentIds"] == ["a"]
    assert "summary" in compacting["description"]
    selecting = processor_summary(app, "model-selection", selector)
    assert selecting["hooks"] == ["process_input", "process_input_step"]


def test_tools_list_and_execute(client: TestClient) -> None:
    assert "add" in client.get("/api/tools").json()
    assert client.post("/api/tools/add/execute", json={"data": {"a": 2, "b": 3}}).json() == {"sum": 5}
    bad = client.post("/api/tools/add/execute", json={"data": {"a": "two"}})
    assert bad.status_code == 400 and bad.json()["field"] == "data"


def test_memory_thread_crud(client: TestClient) -> None:
    created = client.post(
        "/api/memory/threads?agentId=echo", json={"resourceId": "r1", "threadId": "c1", "title": "First"}
    ).json()
    assert created["id"] == "c1" and created["resourceId"] == "r1"
    taken = client.post("/api/memory/threads?agentId=echo", json={"resourceId": "r2", "threadId": "c1"})
    assert taken.status_code == 409
    patched = client.patch(
        "/api/memory/threads/c1?agentId=echo", json={"title": "Second", "resourceId": "r1"}
    )
    assert patched.json()["title"] == "Second"
    client.post(
        "/api/agents/echo/generate", json={"messages": "hello", "memory": {"thread": "c1", "resource": "r1"}}
    )
    messages = client.get("/api/memory/threads/c1/messages", params={"agentId": "echo", "perPage": 1}).json()
    assert messages["total"] == 2 and messages["hasMore"] is True
    assert messages["messages"][0]["role"] == "user"
    assert messages["uiMessages"][0]["role"] == "user"
    assert client.get("/api/memory/threads", params={"agentId": "echo"}).status_code == 400
    assert client.delete("/api/memory/threads/c1?agentId=echo").json() == {"result": "Thread deleted"}
    assert client.get("/api/memory/threads/c1?agentId=echo").status_code == 404


def test_openapi_without_cdn_pages(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert "/api/agents/{agentId}/stream" in schema["paths"]
    assert "/api/processors/{processorId}/execute" in schema["paths"]
    # FastAPI's own Swagger UI / ReDoc pages load scripts from a CDN: /docs is served from local
    # files instead (tests/server/test_api_docs.py), /redoc not at all
    assert "cdn" not in client.get("/docs").text.lower()
    assert client.get("/redoc").status_code == 404
    assert client.get("/").json()["openapi"] == "/openapi.json"


def test_a_failing_processor_is_a_server_error(make_client: Any) -> None:
    from sluicegate import Agent, Sluicegate
    from sluicegate.processors import Processor
    from sluicegate.testing.echo_model import EchoModel

    class Broken(Processor):
        id = "broken"

        def process_input(self, args: Any) -> None:
            raise RuntimeError("bug")

    registry = Sluicegate(agents=[Agent(name="b", model=EchoModel(), input_processors=[Broken()])])
    client = make_client(registry=registry)
    response = client.post("/api/agents/b/generate", json={"messages": "x"})
    assert response.status_code == 500
    assert "broken" in response.json()["error"]
    events, done = sse_events(client.post("/api/agents/b/stream", json={"messages": "x"}).text)
    assert done and events[-1]["type"] == "error"


def test_agent_scoped_tools(client: TestClient) -> None:
    assert client.get("/api/agents/echo/tools/add").json()["id"] == "add"
    done = client.post("/api/agents/echo/tools/add/execute", json={"data": {"a": 1, "b": 1}})
    assert done.json() == {"sum": 2}
    assert client.post("/api/agents/plain/tools/add/execute", json={"data": {}}).status_code == 404
    assert client.get("/api/agents/nobody/tools/add").status_code == 404


def test_runs_are_traced_for_the_studio(make_client: Any) -> None:
    client = make_client(ServerSettings(studio=True))
    response = client.post("/api/agents/echo/generate", json={"messages": "hi"})
    trace_id = response.headers["x-sluicegate-trace-id"]
    assert len(trace_id) == 32
    view = client.get(f"/api/studio/traces/{trace_id}").json()
    assert view["spans"][0]["name"] == "POST generate echo"
    assert client.get("/api/studio/traces/" + "0" * 32).status_code == 404


def test_no_studio_routes_without_the_studio(client: TestClient) -> None:
    assert client.get("/api/studio/traces").status_code == 404
    assert client.get("/studio").status_code == 404
