"""Span names and attribute keys: the names a trace viewer (or the studio) reads.

GenAI keys follow the OpenTelemetry semantic conventions for generative AI; the `sluicegate.*`
keys are ours. Keep them stable: dashboards and the studio timeline match on them.
"""

from __future__ import annotations

# Span names (each followed by a space and the agent, model, tool or processor id and phase).
INVOKE_AGENT = "invoke_agent"
CHAT = "chat"
EXECUTE_TOOL = "execute_tool"
PROCESSOR = "processor"

# sluicegate attributes
RUN_ID = "sluicegate.run_id"
TOOL_WAITING = "sluicegate.tool.waiting"
"""On a tool span: the call waits on a person (`tool-call-approval` / `tool-call-suspended`)."""
TOOL_REFUSED_BY = "sluicegate.tool.refused_by"
"""On a tool span: the processor that refused the call (`args.reject`); the tool never ran."""
TOOL_REFUSAL_REASON = "sluicegate.tool.refusal_reason"
"""On a tool span, and the refusing processor's `tool_call` span: what the model was told."""
AGENT_ID = "sluicegate.agent.id"
STEP_NUMBER = "sluicegate.step_number"
PROCESSOR_ID = "sluicegate.processor.id"
PROCESSOR_PHASE = "sluicegate.processor.phase"
PROCESSOR_OUTCOME = "sluicegate.processor.outcome"
TRIPWIRE_REASON = "sluicegate.tripwire.reason"
TRIPWIRE_RETRY = "sluicegate.tripwire.retry"
TRIPWIRE_PROCESSOR_ID = "sluicegate.tripwire.processor_id"
HOOK_DURATION_MS = "sluicegate.hook.duration_ms"
STREAM_CHUNKS_SEEN = "sluicegate.stream.chunks_seen"
STREAM_CHUNKS_DROPPED = "sluicegate.stream.chunks_dropped"
STREAM_CHUNKS_MODIFIED = "sluicegate.stream.chunks_modified"
STREAM_CHUNKS_TIMED = "sluicegate.stream.chunks_timed"
STREAM_HELD_CHARS = "sluicegate.stream.held_chars"
"""On an `output_stream` span: the most characters the processor held back at once."""
STREAM_HELD_MS = "sluicegate.stream.held_ms"
"""On an `output_stream` span: the longest time it held any text back, in milliseconds."""
CONTENT_BEFORE = "sluicegate.content.before"
CONTENT_AFTER = "sluicegate.content.after"
"""On a `modified` processor span, with `capture_changes`: what it was given and what it made of
it (the text for `output_stream`; messages, prompt or tool result as JSON for the others)."""
REDACTION_EVENT = "sluicegate.redaction"
REDACTION_KIND = "sluicegate.redaction.kind"
REDACTION_COUNT = "sluicegate.redaction.count"
USAGE_COST = "sluicegate.usage.cost_usd"
FINISH_REASON = "sluicegate.finish_reason"
STEPS = "sluicegate.steps"
RETRIES = "sluicegate.retries"
RESPONSE_REPLAYED = "sluicegate.response.replayed"
LLM_REQUEST_RESPONSE = "sluicegate.llm_request.response"
API_ERROR_TYPE = "sluicegate.api_error.type"

# Processor phases (`sluicegate.processor.phase`), by hook
PHASES: dict[str, str] = {
    "process_input": "input",
    "process_input_step": "input_step",
    "process_llm_request": "llm_request",
    "process_llm_response": "llm_response",
    "process_api_error": "api_error",
    "process_output_stream": "output_stream",
    "process_output_step": "output_step",
    "process_output_result": "output_result",
    "process_tool_result": "tool_result",
    "process_tool_call": "tool_call",
}

# Processor outcomes (`sluicegate.processor.outcome`)
PASS = "pass"
MODIFIED = "modified"
HELD = "held"
"""`output_stream` only: chunks were held back and regrouped, the text came out unchanged."""
ABORT = "abort"
REFUSED = "refused"
"""`tool_call` only: the processor refused the one call (`args.reject`); the run went on."""
RETRY = "retry"
ERROR = "error"

# OpenTelemetry GenAI semantic conventions
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_SYSTEM = "gen_ai.system"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_AGENT_ID = "gen_ai.agent.id"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"
ERROR_TYPE = "error.type"

# Request settings -> GenAI attribute
REQUEST_SETTINGS: dict[str, str] = {
    "temperature": "gen_ai.request.temperature",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "stop_sequences": "gen_ai.request.stop_sequences",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "seed": "gen_ai.request.seed",
}

# A durable run's `invoke_agent` span: the Temporal workflow that runs it (its id is the run id).
DURABLE_WORKFLOW_ID = "sluicegate.durable.workflow_id"
DURABLE_NAMESPACE = "sluicegate.durable.namespace"
DURABLE_TASK_QUEUE = "sluicegate.durable.task_queue"
