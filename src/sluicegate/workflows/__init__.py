"""Processor workflows: compose processors into one, with sequential, parallel and branching steps."""

from sluicegate.processors.workflow import ProcessorWorkflow, Step, create_step, create_workflow

__all__ = ["ProcessorWorkflow", "Step", "create_step", "create_workflow"]
