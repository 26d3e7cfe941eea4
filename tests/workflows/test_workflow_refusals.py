"""Processors whose work happens in per-call hooks (`process_llm_request`, `process_llm_response`,
`process_api_error`) are refused by processor workflows, which cannot run those hooks: a cost
guard or token limiter placed in one would otherwise look active while doing nothing."""

from __future__ import annotations

import pytest

from sluicegate.errors import ConfigurationError
from sluicegate.processors import CostGuardProcessor, RegexFilter, TokenLimiter
from sluicegate.workflows import create_step, create_workflow


@pytest.mark.parametrize(
    "processor",
    [CostGuardProcessor(max_cost=1.0), TokenLimiter(1000)],
    ids=["cost-guard", "token-limiter"],
)
def test_per_call_processors_are_refused_by_workflows(processor: object) -> None:
    with pytest.raises(ConfigurationError, match="workflows do not run"):
        create_step(processor)
    with pytest.raises(ConfigurationError, match="process_llm_request"):
        create_workflow(id="w").then(processor)


def test_processors_a_workflow_can_run_are_accepted() -> None:
    step = create_step(RegexFilter(presets=["pii"]))
    assert "process_input" in step.hooks()
