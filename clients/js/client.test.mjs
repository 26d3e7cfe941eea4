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

// Human in the loop: the echo agent calls a tool when told `/tool <name> <JSON args>`; `wipe`
// waits for an approval, `ask` suspends itself until it gets `{ answer }`.
const WIPE = '/tool wipe {"path": "/tmp/from-node"}';
const ASK = '/tool ask {"question": "Which colour?"}';

async function suspended(text, memory) {
  const chunks = await collect(await client.getAgent('echo').stream(text, memory ? { memory } : {}));
  const last = chunks.at(-1);
  assert.ok(['tool-call-approval', 'tool-call-suspended'].includes(last.type), `suspended, got ${last.type}`);
  return { chunks, runId: last.runId, toolCallId: last.payload.toolCallId, last };
}

function text(chunks) {
  return chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
}

test('approve a tool call, listed first', async () => {
  const resourceId = `hitl-${Date.now()}`;
  const agent = client.getAgent('echo');
  const { runId, toolCallId, last } = await suspended(WIPE, { thread: `${resourceId}-t`, resource: resourceId });
  assert.deepEqual(last.payload.args, { path: '/tmp/from-node' });
  const listed = await agent.listSuspendedRuns({ resourceId });
  assert.equal(listed.total, 1);
  assert.equal(listed.runs[0].runId, runId);
  assert.equal(listed.runs[0].status, 'suspended');
  assert.deepEqual(listed.runs[0].toolCalls, [
    { toolCallId, toolName: 'wipe', args: { path: '/tmp/from-node' }, requiresApproval: true },
  ]);
  const chunks = await collect(await agent.approveToolCall({ runId, toolCallId }));
  assert.equal(chunks[0].type, 'tool-result');
  assert.deepEqual(chunks[0].payload.result, { wiped: '/tmp/from-node' });
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(text(chunks), 'Tool wipe said: {"wiped": "/tmp/from-node"}');
  assert.equal((await agent.listSuspendedRuns({ resourceId })).total, 0);
  // decided once: a second approval is refused
  await assert.rejects(
    agent.approveToolCall({ runId, toolCallId }).then((r) => collect(r)),
    (error) => error.status === 404,
  );
});

test('decline a tool call', async () => {
  const { runId, toolCallId } = await suspended(WIPE);
  const chunks = await collect(await client.getAgent('echo').declineToolCall({ runId, toolCallId, reason: 'not that one' }));
  const denied = chunks.find((c) => c.type === 'tool-output-denied');
  assert.equal(denied.payload.reason, 'not that one');
  assert.equal(chunks.some((c) => c.type === 'tool-result'), false);
  assert.equal(text(chunks), 'Tool wipe said: "not that one"');
});

test('approve and decline with generate', async () => {
  const agent = client.getAgent('echo');
  const first = await agent.generate(WIPE);
  assert.equal(first.finishReason, 'suspended');
  assert.equal(first.suspendPayload.toolName, 'wipe');
  const approved = await agent.approveToolCallGenerate({ runId: first.runId, toolCallId: first.suspendPayload.toolCallId });
  assert.equal(approved.finishReason, 'stop');
  assert.equal(approved.text, 'Tool wipe said: {"wiped": "/tmp/from-node"}');
  const second = await agent.generate(WIPE);
  const declined = await agent.declineToolCallGenerate({ runId: second.runId, toolCallId: second.suspendPayload.toolCallId });
  assert.equal(declined.text, 'Tool wipe said: "Tool call was not approved by the user"');
});

test('resumeStream gives a suspended tool its answer', async () => {
  const { runId, toolCallId, last } = await suspended(ASK);
  assert.equal(last.type, 'tool-call-suspended');
  assert.deepEqual(last.payload.suspendPayload, { question: 'Which colour?' });
  const agent = client.getAgent('echo');
  await assert.rejects(
    agent.resumeStream({ colour: 'blue' }, { runId, toolCallId }).then((r) => collect(r)),
    (error) => error.status === 400 && /resumeData/.test(error.message),
  );
  const chunks = await collect(await agent.resumeStream({ answer: 'blue' }, { runId, toolCallId }));
  assert.deepEqual(chunks[0].payload.result, { answer: 'blue' });
  assert.equal(text(chunks), 'Tool ask said: {"answer": "blue"}');
});

test('observe replays a run from an offset', async () => {
  const agent = client.getAgent('echo');
  const { chunks: asked, runId, toolCallId } = await suspended(WIPE);
  const rest = await collect(await agent.approveToolCall({ runId, toolCallId }));
  const replay = await collect(await agent.observe({ runId }));
  assert.deepEqual(replay, [...asked, ...rest]);
  const tail = await collect(await agent.observe({ runId, offset: asked.length }));
  assert.deepEqual(tail, rest);
  await assert.rejects(agent.observe({ runId: 'no-such-run' }), (error) => error.status === 404);
});

// Served by a second server (`example_app.py:boss`); skipped when SLUICEGATE_SUB_AGENTS_URL is unset.
const subAgentsUrl = process.env.SLUICEGATE_SUB_AGENTS_URL;

test('an approval two levels down in sub-agents round-trips', { skip: !subAgentsUrl }, async () => {
  const clerkSays = '/tool wipe {"path": "/tmp/two-down"}';
  const researcherSays = `/tool agent-clerk ${JSON.stringify({ prompt: clerkSays })}`;
  const bossSays = `/tool agent-researcher ${JSON.stringify({ prompt: researcherSays })}`;
  const agent = new MastraClient({ baseUrl: subAgentsUrl, headers, retries: 0 }).getAgent('boss');
  const chunks = await collect(await agent.stream(bossSays));
  const waiting = chunks.find((c) => c.type === 'tool-call-suspended');
  assert.ok(waiting, `the parent waits, got ${chunks.map((c) => c.type).join(',')}`);
  assert.equal(waiting.payload.toolName, 'agent-researcher');
  assert.equal(waiting.payload.suspendPayload.path, 'researcher › clerk › wipe');
  assert.deepEqual(waiting.payload.suspendPayload.suspendPayload.args, { path: '/tmp/two-down' });
  const resumed = await collect(
    await agent.resumeStream({ approved: true }, { runId: waiting.runId, toolCallId: waiting.payload.toolCallId }),
  );
  const result = resumed.find((c) => c.type === 'tool-result');
  assert.deepEqual(result.payload.result, {
    // the example model quotes the result as Python's json.dumps writes it
    text: 'Tool agent-clerk said: {"text": "Tool wipe said: {\\"wiped\\": \\"/tmp/two-down\\"}"}',
  });
  assert.equal(resumed.at(-1).type, 'finish');
});
