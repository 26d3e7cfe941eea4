"""Durable runs: an agent's run that survives the crash of the process running it.

`sluicegate.durable.temporal` runs agents on Temporal (the `temporal` extra); see
docs/durable.md. Nothing here is imported by `import sluicegate`.
"""
