"""A2A over an agent run (`/api/a2a/{agentId}`, protocol 0.3 JSON-RPC, Mastra's routes): the
tasks, their events and the routes."""
