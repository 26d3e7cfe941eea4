// The unmodified @mastra/client-js against a running sluicegate server: its Responses API calls
// (`client.responses`) and its A2A client (`client.getA2A`). SLUICEGATE_URL names the server; it
// must serve tests/server/protocols/protocol_app.py (agent "echo": the block-word tripwire, a
// wipe tool that needs approval, memory). Run by tests/server/protocols/test_client_js.py.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MastraClient } from '@mastra/client-js';

const baseUrl = process.env.SLUICEGATE_URL ?? 'http://127.0.0.1:4111';
const headers = process.env.SLUICEGATE_API_TOKEN ? { Authorization: `Bearer ${process.env.SLUICEGATE_API_TOKEN}` } : {};
const client = new MastraClient({ baseUrl, headers, retries: 0 });

test('responses: create, continue, retrieve, delete', async () => {
  const first = await client.responses.create({ agent_id: 'echo', model: 'echo', input: 'hello responses', store: true });
  assert.equal(first.status, 'completed');
  assert.equal(first.output_text, 'Echo: hello responses');
  const second = await client.responses.create({ model: 'echo', input: 'and again', previous_response_id: first.id, store: true });
  assert.equal(second.output_text, 'Echo: and again');
  assert.equal(second.conversation.id, first.conversation.id);
  const stored = await client.responses.retrieve(first.id);
  assert.equal(stored.output_text, 'Echo: hello responses');
  const deleted = await client.responses.delete(first.id);
  assert.equal(deleted.deleted, true);
  await assert.rejects(client.responses.retrieve(first.id));
});

test('responses: streamed, with a tripwire', async () => {
  const stream = await client.responses.stream({ agent_id: 'echo', model: 'echo', input: 'stream it' });
  const events = [];
  for await (const event of stream) events.push(event);
  assert.equal(events[0].type, 'response.created');
  assert.equal(events.at(-1).type, 'response.completed');
  const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  assert.equal(text, 'Echo: stream it');
  const tripped = await client.responses.create({ agent_id: 'echo', model: 'echo', input: 'forbidden' });
  assert.equal(tripped.status, 'incomplete');
  assert.equal(tripped.tripwire.processorId, 'block-word');
});

const message = (text, extra = {}) => ({
  message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts: [{ kind: 'text', text }], ...extra },
});

test('a2a: card, send, get, stream', async () => {
  const a2a = client.getA2A('echo');
  const card = await a2a.getAgentCard();
  assert.equal(card.name, 'echo');
  assert.equal(card.protocolVersion, '0.3.0');
  const sent = await a2a.sendMessage(message('hello a2a'));
  assert.equal(sent.result.status.state, 'completed');
  assert.equal(sent.result.artifacts[0].parts[0].text, 'Echo: hello a2a');
  const fetched = await a2a.getTask({ id: sent.result.id });
  assert.equal(fetched.result.status.state, 'completed');
  const events = [];
  for await (const event of a2a.sendMessageStream(message('stream a2a'))) events.push(event);
  assert.equal(events[0].kind, 'task');
  const text = events.filter((e) => e.kind === 'artifact-update').map((e) => e.artifact.parts[0].text).join('');
  assert.equal(text, 'Echo: stream a2a');
  assert.equal(events.at(-1).status.state, 'completed');
  assert.equal(events.at(-1).final, true);
});

test('a2a: approval round trip, tripwire, cancel', async () => {
  const a2a = client.getA2A('echo');
  const asked = await a2a.sendMessage(message('/tool wipe {"path": "/tmp/client-js"}'));
  assert.equal(asked.result.status.state, 'input-required');
  const approved = await a2a.sendMessage(message('approve', { taskId: asked.result.id }));
  assert.equal(approved.result.status.state, 'completed');
  assert.equal(approved.result.status.message.parts[0].text, 'Tool wipe said: {"wiped": "/tmp/client-js"}');
  const tripped = await a2a.sendMessage(message('forbidden'));
  assert.equal(tripped.result.status.state, 'rejected');
  assert.equal(tripped.result.status.message.metadata.tripwire.processorId, 'block-word');
  const waiting = await a2a.sendMessage(message('/tool wipe {"path": "/tmp/client-js-canceled"}'));
  const canceled = await a2a.cancelTask({ id: waiting.result.id });
  assert.equal(canceled.result.status.state, 'canceled');
});
