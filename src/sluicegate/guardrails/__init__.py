"""The machinery the guardrail processors share; the processors themselves live in
`sluicegate.processors.builtin` and are exported by `sluicegate.processors`.

Nothing is imported here, so each processor loads only the parts it uses.
"""
