"""Test helpers: a scripted model and step builders."""

from sluicegate.testing.mock_model import MockModel, text_step, tool_call_step

__all__ = ["MockModel", "text_step", "tool_call_step"]
