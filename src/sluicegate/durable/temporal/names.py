"""The names a durable run has on Temporal. They are part of every workflow's history: renaming
an agent, a tool or a processor (or changing these rules) breaks the runs in flight that used
the old name, as renaming any Temporal activity does."""

from __future__ import annotations

WORKFLOW = "sluicegate.agent"
"""The workflow type of every agent's run; the agent id is in its input."""
DEFAULT_TASK_QUEUE = "sluicegate"
PUBLISH = "sluicegate.publish"
"""Writes the workflow's own chunks (start, step-start, tool results, finish) into the run log."""
OPEN_RUN = "sluicegate.open-run"
RETRY_NOTICE = "data-stream-retry"
"""The chunk type a retried model call streams before its new text."""
TOOL_RETRY_NOTICE = "data-tool-retry"
"""The chunk type a retried tool call streams before its new data chunks."""
FAILED_ATTEMPT = "modelAttempt"
"""The detail a failed model call adds to its failure: whether its stream had opened, and what
it had streamed (the workflow's loop decides from it whether to move to the next model)."""
APPROVE = "approve_tool_call"
DECLINE = "decline_tool_call"
RESUME = "resume_stream"
PENDING = "pending_tool_call"
OUTPUT = "output"
"""The query of the run's output so far (the workflow's result shape): a waiting run's too."""
FORMAT = "format"
"""The key of a run's input naming its format (`RUN_FORMAT`)."""
TEXT_FORMAT = 1
"""A run whose log is opened by its first write and whose chunks travel to the log as JSON text."""
PACKED_FORMAT = 2
"""As `TEXT_FORMAT`, and the chunks an activity carries to the log travel packed
(`packed_chunks`)."""
RUN_FORMAT = PACKED_FORMAT
"""The format `TemporalRuns.start` writes into a new run's input. Decided by the input, which
the history holds, not by `workflow.patched`, whose marker costs every run two more events and
a search-attribute update each; a run without it (started by an older client, or recorded
before) asks the patches as it did, and a run of an earlier format keeps it."""


def model_activity(agent_id: str) -> str:
    """One model call of the agent (the provider stream and the output stream processors)."""
    return f"sluicegate.{agent_id}.model"


def tool_activity(agent_id: str, tool_name: str) -> str:
    """One call of one of the agent's tools."""
    return f"sluicegate.{agent_id}.tool.{tool_name}"


def storage_activity(agent_id: str) -> str:
    """One call of a store the agent's run uses (its memory's storage, the cost guard's budget)."""
    return f"sluicegate.{agent_id}.storage"


def judge_activity(agent_id: str, processor_id: str) -> str:
    """One call of a guardrail's judge model (an LLM judge asked outside the stream)."""
    return f"sluicegate.{agent_id}.judge.{processor_id}"


def embed_activity(agent_id: str) -> str:
    """One embedding call of the agent's memory (semantic recall: the query, new messages)."""
    return f"sluicegate.{agent_id}.embed"
