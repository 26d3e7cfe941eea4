"""OpenAI's Responses API over an agent run (`/api/v1/responses`, Mastra's shape): the body,
the events, the stored responses and the routes."""
