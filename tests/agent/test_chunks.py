"""Stream chunks: attribute access, Mastra JSON, and back."""

from __future__ import annotations

from sluicegate.errors import APICallError
from sluicegate.stream import Chunk, Payload, Usage


def test_payload_attributes_are_snake_case_and_json_is_camel_case():
    chunk = Chunk(
        "tool-result",
        "run-1",
        Payload(tool_call_id="c1", tool_name="w", args={"a_b": 1}, result={"x_y": 2}, is_error=False),
    )
    assert chunk.payload.tool_call_id == "c1"
    assert chunk.to_dict() == {
        "type": "tool-result",
        "runId": "run-1",
        "from": "AGENT",
        "payload": {
            "toolCallId": "c1",
            "toolName": "w",
            "args": {"a_b": 1},
            "result": {"x_y": 2},
            "isError": False,
        },
    }


def test_nested_payloads_and_usage_round_trip():
    chunk = Chunk(
        "step-finish", "r", Payload(step_result=Payload(reason="stop"), output=Payload(usage=Usage(3, 4)))
    )
    data = chunk.to_dict()
    assert data["payload"] == {
        "stepResult": {"reason": "stop"},
        "output": {"usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}},
    }
    again = Chunk.from_dict(data)
    assert again.payload.step_result.reason == "stop"
    assert again.payload.output.usage.input_tokens == 3
    assert again.to_dict() == data


def test_error_payload_is_message_and_name():
    chunk = Chunk("error", "r", Payload(error=APICallError("boom", status_code=500, is_retryable=True)))
    assert chunk.to_dict()["payload"]["error"] == {
        "message": "boom",
        "name": "AI_APICallError",
        "statusCode": 500,
        "isRetryable": True,
    }


def test_data_chunks_carry_data_and_are_mutable():
    chunk = Chunk.from_dict({"type": "data-progress", "data": {"pct": 10}})
    assert chunk.data == {"pct": 10}
    chunk.data = {"pct": 20}
    assert chunk.to_dict()["data"] == {"pct": 20}
    assert chunk.to_dict()["from"] == "AGENT"


def test_usage_sums_and_reads_missing_counts_as_zero():
    total = Usage.from_v2({"inputTokens": 1}) + Usage.from_v2(
        {"inputTokens": 2, "outputTokens": 5, "reasoningTokens": 1}
    )
    assert (total.input_tokens, total.output_tokens, total.total_tokens, total.reasoning_tokens) == (
        3,
        5,
        8,
        1,
    )
