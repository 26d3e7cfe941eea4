"""AG-UI (`POST /api/agents/{agentId}/ag-ui`): a `RunAgentInput` in, the run's events out.

`routes` reads the input and starts (or resumes) the run, `messages` turns AG-UI's messages and
frontend tools into the agent's, `events` turns the run's chunks into AG-UI events. The event
types are the `ag-ui-protocol` package's (the `ag-ui` extra), imported only when the route runs.
"""
