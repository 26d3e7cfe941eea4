"""Every chunk of a durable run passes through the agent's output stream processors, as in one
process: the model's (in the model activity), a tool's data chunks (in its tool activity) and
the chunks the workflow makes (tool results, step boundaries, in the workflow's loop), with the
processors' state carried from one to the next.

The attack: a tool whose result and data chunk carry an email and a card number, and a
redacting stream processor (stream only: no `process_tool_result`). Nothing raw may reach the
run log, the `/stream` route, or a chunk stored in the workflow's Temporal history.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from tests.durable.served import served_durably

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import TemporalRuns
from sluicegate.durable.temporal.packed_chunks import unpacked_texts
from sluicegate.processors import Processor
from sluicegate.stream.chunk import Chunk
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import ToolContext

pytestmark = pytest.mark.integration

EMAIL = "jane.doe@example.com"
CARD = "4111 1111 1111 1111"
RAW = (EMAIL, CARD, "4111111111111111")
_PII = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b(?:\d[ -]?){12,15}\d\b")


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _PII.sub("[REDACTED]", value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


class StreamRedactor(Processor):
    """Redacts emails and card numbers in every chunk it sees, data parts included; counts its
    redactions in `state` and reports the count at the end (so a lost state shows)."""

    id = "stream-redactor"
    process_data_parts = True

    def process_output_stream(self, args: Any) -> Any:
        part = args.part
        raw = part.to_dict()
        scrubbed = _scrub(raw)
        if scrubbed == raw:
            return part
        args.state["redactions"] = args.state.get("redactions", 0) + 1
        return Chunk.from_dict(scrubbed)

    async def process_output_result(self, args: Any) -> Any:
        await args.writer.custom(
            {"type": "data-redactions", "data": {"count": args.state.get("redactions", 0)}}
        )
        return args.messages


def _agent(agent_id: str) -> Agent[Any]:
    @tool
    async def customer(name: str, context: ToolContext) -> dict[str, str]:
        """Look a customer up."""
        await context.writer.custom({"type": "data-lookup", "data": {"found": f"{name} <{EMAIL}>"}})
        return {"name": name, "email": EMAIL, "card": CARD}

    model = MockModel([tool_call_step(("c1", "customer", {"name": "Jane"})), text_step("Found her.")])
    return Agent(agent_id, model=model, tools=[customer], output_processors=[StreamRedactor()])


def _leaks(value: Any) -> list[str]:
    text = json.dumps(value)
    return [raw for raw in RAW if raw in text]


def _history_chunks(history_json: str) -> list[dict[str, Any]]:
    """Every chunk (a dict with a `type` and a `runId`) the history's events carry on its way to
    the log: the chunks activities publish and hand back, those the workflow sends with them
    (packed or not).
    The run's record (the prompt's messages, the result's `steps` and `messages`) holds the tool's
    result as it does in one process (the model reads it; `generate` returns it): a stream
    processor changes what is streamed, not that record."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("type"), str) and "runId" in value:
                found.append(value)
            if isinstance(value.get("packed"), str):  # a carry's chunks, packed (`packed_chunks`)
                walk(unpacked_texts(value["packed"]))
            for key, inner in value.items():
                if key not in RECORD:
                    walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)
        elif isinstance(value, str) and value.startswith('{"type":'):
            walk(json.loads(value))  # a chunk that travels as its JSON text (`Outbox.encode`)

    for event in json.loads(history_json)["events"]:
        for data in re.findall(r'"data":\s*"([A-Za-z0-9+/=]+)"', json.dumps(event)):
            try:
                walk(json.loads(base64.b64decode(data)))
            except ValueError:
                continue
    return found


RECORD = frozenset({"messages", "steps", "toolCalls", "options", "result"})
"""Keys of the run's record, not of streamed chunks (see `_history_chunks`)."""


async def _in_process() -> list[dict[str, Any]]:
    return [c.to_dict() async for c in (await _agent("pii-local").stream("who is Jane?")).full_stream]


def _counts(chunks: list[dict[str, Any]]) -> list[int]:
    return [c["data"]["count"] for c in chunks if c["type"] == "data-redactions"]


async def test_in_process_the_redactor_sees_the_tool_result_and_its_data() -> None:
    chunks = await _in_process()
    assert not _leaks(chunks)
    kinds = [c["type"] for c in chunks]
    assert "tool-result" in kinds and "data-lookup" in kinds
    # The data chunk, the tool result, and the step and run summaries that quote the result.
    assert _counts(chunks) == [4]


async def test_no_raw_value_leaves_a_durable_run(
    temporal_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent("pii-durable")
    app = Sluicegate(agents={agent.id: agent})
    async with served_durably(app, temporal_server, monkeypatch) as (http, client, queue):
        response = await http.post(f"/api/agents/{agent.id}/stream", json={"messages": "who is Jane?"})
        assert response.status_code == 200, response.text
        streamed = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")]
        run_id = streamed[0]["runId"]
        runs = TemporalRuns(client, task_queue=queue)
        result = await runs.result(run_id)
        logged = [c.to_dict() async for c in (await runs.observe(agent, run_id)).full_stream]
        history = (await client.get_workflow_handle(run_id).fetch_history()).to_json()

    assert result["text"] == "Found her."
    kinds = [c["type"] for c in logged]
    assert "tool-result" in kinds and "data-lookup" in kinds
    assert not _leaks(streamed), "the /stream route showed a raw value"
    assert not _leaks(logged), "the run log holds a raw value"
    stored = _history_chunks(history)
    assert {"tool-result", "data-lookup"} <= {c["type"] for c in stored}
    assert not _leaks(stored), f"chunks in the workflow's history hold a raw value: {stored}"
    # The processor's state went from the workflow to the tool activity and back: it counted
    # the tool's data chunk (redacted in the activity) and what the workflow made, as in one process.
    assert _counts(logged) == _counts(await _in_process()) == [4]
