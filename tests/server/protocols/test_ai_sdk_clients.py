"""`POST /chat/{agentId}` driven by the AI SDK's own clients, `ai` v5 and the current major
(`DefaultChatTransport` + `readUIMessageStream`, clients/ai-sdk/chat.mjs), against a live
server with a bearer token: a streamed answer with a redacted email, a tool result redacted,
a tripwire as a `data-tripwire` part, and an approval answered both ways."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.live import serve_in_thread
from tests.server.protocols.ai_sdk_clients import need, run_chat
from tests.server.protocols.chat_app import EMAIL, build, wiped

from sluicegate.server import ServerSettings, create_app

TOKEN = "ai-sdk-test-token"
PACKAGES = ["ai", "ai-v5"]


SCENARIOS = ["text", "lookup", "tripwire", "approve", "decline"]


@pytest.fixture(scope="module")
def played() -> Iterator[dict[str, tuple[str, dict[str, Any]]]]:
    """Each package's client through every scenario, once (a node process costs ~1 s): its raw
    output and its results; the tool calls the approvals ran."""
    registry, _ = build()
    results: dict[str, tuple[str, dict[str, Any]]] = {}
    with serve_in_thread(create_app(registry, ServerSettings(api_token=TOKEN))) as url:
        for package in PACKAGES:
            need(package)
            wiped.clear()
            raw, out = run_chat(package, url, SCENARIOS, TOKEN)
            out["wiped"] = list(wiped)
            results[package] = (raw, out)
    yield results


def _chat(
    played: dict[str, tuple[str, dict[str, Any]]], package: str, scenario: str
) -> tuple[str, dict[str, Any]]:
    raw, out = played[package]
    return raw, {**out[scenario], "wiped": out["wiped"]}


def _text(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p["type"] == "text")


@pytest.mark.parametrize("package", PACKAGES)
def test_a_streamed_answer_never_shows_the_redacted_email(package: str, played: Any) -> None:
    raw, out = _chat(played, package, "text")
    first = out["first"]
    assert first["errors"] == []
    assert _text(first["message"]) == "Echo: hello, write to [EMAIL] please"
    deltas = [c for c in first["chunks"] if c["type"] == "text-delta"]
    assert len(deltas) > 3  # streamed, not one block
    assert [c["type"] for c in first["chunks"]][:2] == ["start", "start-step"]
    assert first["chunks"][-1] == {"type": "finish", "finishReason": "stop"}
    assert EMAIL not in raw and "lovelace" not in raw


@pytest.mark.parametrize("package", PACKAGES)
def test_a_tool_result_is_redacted_too(package: str, played: Any) -> None:
    raw, out = _chat(played, package, "lookup")
    tool = next(p for p in out["first"]["message"]["parts"] if p["type"] == "tool-lookup")
    assert tool["state"] == "output-available"
    assert tool["input"] == {"name": "ada"}
    assert EMAIL not in raw and "lovelace" not in raw


@pytest.mark.parametrize("package", PACKAGES)
def test_a_tripwire_is_a_data_part_naming_the_processor_then_finish(package: str, played: Any) -> None:
    _, out = _chat(played, package, "tripwire")
    chunks = out["first"]["chunks"]
    assert [c["type"] for c in chunks] == ["start", "data-tripwire", "finish"]
    assert chunks[1]["data"] == {
        "reason": "The word 'forbidden' is not allowed",
        "processorId": "block-word",
        "metadata": {"word": "forbidden"},
        "retry": False,
    }
    assert chunks[2]["finishReason"] == "other"
    assert out["first"]["message"]["parts"] == [{"type": "data-tripwire", "data": chunks[1]["data"]}]


@pytest.mark.parametrize("package", PACKAGES)
def test_an_approval_round_trip_runs_the_tool(package: str, played: Any) -> None:
    _, out = _chat(played, package, "approve")
    first, second = out["first"], out["second"]
    types = [c["type"] for c in first["chunks"]]
    if package == "ai":  # the AI SDK's own approval request (v6 and later)
        assert "tool-approval-request" in types
        part = next(p for p in first["message"]["parts"] if p["type"] == "tool-wipe")
        assert part["state"] == "approval-requested"
    else:  # v5 has no approval parts: Mastra's data part only
        assert "tool-approval-request" not in types
    assert "data-tool-call-approval" in types
    assert out["wiped"] == ["/tmp/important"]  # the decline never ran it
    assert second["errors"] == []
    assert second["message"]["id"] == first["message"]["id"]  # the same message, continued
    tool = next(p for p in second["message"]["parts"] if p["type"] == "tool-wipe")
    assert tool["state"] == "output-available"
    assert tool["output"] == {"wiped": "/tmp/important"}
    assert 'Tool wipe said: {"wiped": "/tmp/important"}' in _text(second["message"])


@pytest.mark.parametrize("package", PACKAGES)
def test_a_declined_approval_never_runs_the_tool(package: str, played: Any) -> None:
    _, out = _chat(played, package, "decline")
    second = out["second"]
    tool = next(p for p in second["message"]["parts"] if p["type"] == "tool-wipe")
    assert tool["state"] == ("output-denied" if package == "ai" else "output-error")
    assert 'Tool wipe said: "not today"' in _text(second["message"])
