"""The AI SDK's UI message stream protocol: `POST /chat/{agentId}`, as `@mastra/ai-sdk`'s
`chatRoute` serves it, for `useChat` and `DefaultChatTransport` (docs/protocols.md)."""
