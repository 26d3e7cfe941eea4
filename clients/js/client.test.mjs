// The unmodified @mastra/client-js against a running sluicegate server.
// SLUICEGATE_URL names the server (default http://127.0.0.1:4111); it must serve
// tests/server/example_app.py (agents "echo" and "plain", the "block-word" guardrail, SQLite memory).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MastraClient } from '@mastra/client-js';

const baseUrl = process.env.SLUICEGATE_URL ?? 'http://127.0.0.1:4111';
const headers = process.env.SLUICEGATE_API_TOKEN ? { Authorization: `Bearer ${process.env.SLUICEGATE_API_TOKEN}` } : {};
const client = new MastraClient({ baseUrl, headers, retries: 0 });

async function collect(response) {
  const chunks = [];
  await response.processDataStream({ onChunk: async (chunk) => { chunks.push(chunk); } });
  return chunks;
}

test('lists agents', async () => {
  const agents = await client.listAgents();
  assert.deepEqual(Object.keys(agents).sort(), ['echo', 'plain']);
  assert.equal(agents.echo.name, 'echo');
  assert.deepEqual(agents.echo.inputProcessors.map((p) => p.id), ['unicode-normalizer', 'block-word']);
});

test('agent details', async () => {
  const details = await client.getAgent('echo').details();
  assert.equal(details.instructions, 'You repeat the user.');
  assert.equal(details.provider, 'echo');
  assert.ok(details.tools.add, 'the add tool is listed');
});

test('generate', async () => {
  const result = await client.getAgent('echo').generate('hello from node');
  assert.match(result.text, /^Echo: hello from node/);
  assert.equal(result.finishReason, 'stop');
  assert.ok(result.usage.totalTokens > 0);
  assert.equal(result.tripwire, undefined);
});

test('generate reports a tripwire', async () => {
  const result = await client.getAgent('echo').generate('this is forbidden');
  assert.equal(result.tripwire.reason, "The word 'forbidden' is not allowed");
  assert.equal(result.tripwire.processorId, 'block-word');
  assert.equal(result.finishReason, 'other');
});

test('stream text', async () => {
  const response = await client.getAgent('echo').stream('stream me');
  const chunks = await collect(response);
  const types = chunks.map((c) => c.type);
  assert.equal(types[0], 'start');
  assert.equal(types.at(-1), 'finish');
  const text = chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
  assert.match(text, /^Echo: stream me/);
  assert.equal(chunks.at(-1).payload.stepResult.reason, 'stop');
});

test('stream a tripwire', async () => {
  const response = await client.getAgent('echo').stream([{ role: 'user', content: 'forbidden words' }]);
  const chunks = await collect(response);
  const tripwire = chunks.find((c) => c.type === 'tripwire');
  assert.ok(tripwire, 'a tripwire chunk arrives');
  assert.equal(tripwire.payload.reason, "The word 'forbidden' is not allowed");
  assert.equal(tripwire.payload.processorId, 'block-word');
  assert.equal(chunks.some((c) => c.type === 'text-delta'), false);
});

test('memory threads', async () => {
  const resourceId = `user-${Date.now()}`;
  const threadId = `thread-${Date.now()}`;
  const created = await client.createMemoryThread({ agentId: 'echo', resourceId, threadId, title: 'From node' });
  assert.equal(created.id, threadId);
  await client.getAgent('echo').generate('remember me', { memory: { thread: threadId, resource: resourceId } });
  const listed = await client.listMemoryThreads({ resourceId, agentId: 'echo' });
  assert.deepEqual(listed.threads.map((t) => t.id), [threadId]);
  const thread = client.getMemoryThread({ threadId, agentId: 'echo' });
  const details = await thread.get();
  assert.equal(details.title, 'From node');
  const { messages } = await thread.listMessages();
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
  await thread.update({ title: 'Renamed', metadata: { by: 'node' }, resourceId });
  assert.equal((await thread.get()).title, 'Renamed');
  await thread.delete();
  await assert.rejects(thread.get(), (error) => error.status === 404);
});

test('tools: list and execute', async () => {
  assert.deepEqual(await client.getAgent('echo').executeTool('add', { data: { a: 2, b: 3 } }), { sum: 5 });
  assert.deepEqual(await client.getTool('add').execute({ data: { a: 4, b: 5 } }), { sum: 9 });
  await assert.rejects(client.getTool('add').execute({ data: { a: 'two' } }), (error) => error.status === 400);
});

test('processors: catalogue and execute', async () => {
  const processors = await client.listProcessors();
  assert.deepEqual(processors['block-word'].phases, ['input']);
  const result = await client.getProcessor('block-word').execute({
    phase: 'input',
    messages: [{ id: 'm1', role: 'user', content: { format: 2, parts: [{ type: 'text', text: 'forbidden' }] } }],
  });
  assert.equal(result.success, false);
  assert.equal(result.tripwire.reason, "The word 'forbidden' is not allowed");
});

test('unknown agent is a 404', async () => {
  await assert.rejects(client.getAgent('nobody').details(), (error) => error.status === 404);
});
