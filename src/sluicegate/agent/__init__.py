"""The agent: its loop, its results and its contract with memory."""

from sluicegate.agent.agent import Agent
from sluicegate.agent.memory_binding import AgentMemory, MemoryBinding
from sluicegate.agent.results import FullOutput, Response, StepResult, Tripwire

__all__ = ["Agent", "AgentMemory", "FullOutput", "MemoryBinding", "Response", "StepResult", "Tripwire"]
