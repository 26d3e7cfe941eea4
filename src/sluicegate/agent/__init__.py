"""The agent: its loop, its results and its contract with memory."""

from sluicegate.agent.agent import Agent
from sluicegate.agent.observe import ObservedOutput
from sluicegate.agent.results import FullOutput, Response, StepResult, Tripwire
from sluicegate.memory.binding import AgentMemory, MemoryBinding

__all__ = [
    "Agent",
    "AgentMemory",
    "FullOutput",
    "MemoryBinding",
    "ObservedOutput",
    "Response",
    "StepResult",
    "Tripwire",
]
