#!/usr/bin/env node
// Real Mastra HTTP server, started the way `mastra dev` starts it (its dev.entry template:
// createNodeServer(mastra, {studio, isDev, tools}) from @mastra/deployer/server), hosting the
// wire-harness agents on scripted mock models. app.py is the same app for sluicegate.
//
//   node mastra_server.mjs PORT
//
// ESM resolves packages next to the running file: compare.py runs it from the folder that holds
// node_modules (this one, after `bash run.sh --install-only`).
// Listens on 127.0.0.1 only. Prints "ready PORT" on stdout once it listens.

import { createNodeServer } from '@mastra/deployer/server';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { InMemoryStore } from '@mastra/core/storage';
import { createTool } from '@mastra/core/tools';
import { Memory } from '@mastra/memory';
import { MockLanguageModelV2, simulateReadableStream } from 'ai/test';
import { z } from 'zod';

const port = Number(process.argv[2] ?? 4611);
const usage = n => ({ inputTokens: 5, outputTokens: n, totalTokens: 5 + n });

/** Text of the last user message of a V2 prompt. */
function lastUser(prompt) {
  const user = [...prompt].reverse().find(m => m.role === 'user');
  if (!user) return '';
  return typeof user.content === 'string'
    ? user.content
    : user.content.filter(p => p.type === 'text').map(p => p.text).join('');
}

/** echo: "You said: <input>" one word per text-delta (each word followed by a space). */
function echoParts(options) {
  const words = `You said: ${lastUser(options.prompt)}`.split(' ');
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't1' },
    ...words.map(w => ({ type: 'text-delta', id: 't1', delta: `${w} ` })),
    { type: 'text-end', id: 't1' },
    { type: 'finish', finishReason: 'stop', usage: usage(words.length) },
  ];
}

/** approver: asks for `lookup` unless the last message is a tool result, then answers with it. */
function approverParts(options) {
  const last = options.prompt.at(-1);
  if (last.role === 'tool') {
    const part = last.content.find(p => p.type === 'tool-result') ?? {};
    const out = part.output?.type === 'json' ? JSON.stringify(part.output.value) : JSON.stringify(part.output ?? null);
    return [
      { type: 'stream-start', warnings: [] },
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: `Lookup returned ${out}` },
      { type: 'text-end', id: 't1' },
      { type: 'finish', finishReason: 'stop', usage: usage(3) },
    ];
  }
  const n = options.prompt.filter(m => m.role === 'user').length;
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'tool-call', toolCallId: `call_${n}`, toolName: 'lookup', input: JSON.stringify({ query: lastUser(options.prompt) }) },
    { type: 'finish', finishReason: 'tool-calls', usage: usage(2) },
  ];
}

/** The doGenerate result equivalent to a list of V2 stream parts (as in mastra_runner.mjs). */
function generateResult(parts) {
  const content = [];
  const open = new Map();
  let finishReason = 'stop';
  let u;
  for (const part of parts) {
    if (part.type === 'text-start') {
      const block = { type: 'text', text: '' };
      open.set(part.id, block);
      content.push(block);
    } else if (part.type === 'text-delta') open.get(part.id).text += part.delta;
    else if (part.type === 'tool-call') content.push({ ...part });
    else if (part.type === 'finish') ({ finishReason, usage: u } = part);
  }
  return { content, finishReason, usage: u, warnings: [] };
}

function mockModel(script) {
  return new MockLanguageModelV2({
    doStream: async options => ({
      stream: simulateReadableStream({ chunks: script(options), initialDelayInMs: null, chunkDelayInMs: null }),
    }),
    doGenerate: async options => generateResult(script(options)),
  });
}

/** json: answers `{"answer":"42"}` (for structured output). */
function jsonParts() {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: '{"answer":' },
    { type: 'text-delta', id: 't1', delta: '"42"}' },
    { type: 'text-end', id: 't1' },
    { type: 'finish', finishReason: 'stop', usage: usage(2) },
  ];
}

/** asker: calls `ask` (which suspends for a person's answer), then reports the tool's output. */
function askerParts(options) {
  const last = options.prompt.at(-1);
  if (last.role === 'tool') {
    const part = last.content.find(p => p.type === 'tool-result') ?? {};
    const out = part.output?.type === 'json' ? JSON.stringify(part.output.value) : JSON.stringify(part.output ?? null);
    return [
      { type: 'stream-start', warnings: [] },
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: `Asked: ${out}` },
      { type: 'text-end', id: 't1' },
      { type: 'finish', finishReason: 'stop', usage: usage(2) },
    ];
  }
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'tool-call', toolCallId: 'ask_1', toolName: 'ask', input: JSON.stringify({ topic: lastUser(options.prompt) }) },
    { type: 'finish', finishReason: 'tool-calls', usage: usage(2) },
  ];
}

const forbidden = {
  id: 'forbidden-word',
  async processInput({ messages, abort }) {
    for (const m of messages) {
      for (const p of m.content?.parts ?? []) {
        if (p.type === 'text' && p.text.includes('forbidden')) {
          abort("The word 'forbidden' is not allowed", { metadata: { word: 'forbidden' } });
        }
      }
    }
    return messages;
  },
};

const lookup = createTool({
  id: 'lookup',
  description: 'Look something up',
  inputSchema: z.object({ query: z.string() }),
  requireApproval: true,
  execute: async input => ({ answer: `found ${input.query}` }),
});

const ask = createTool({
  id: 'ask',
  description: 'Ask a person',
  inputSchema: z.object({ topic: z.string() }),
  suspendSchema: z.object({ question: z.string() }),
  resumeSchema: z.object({ colour: z.string() }),
  execute: async ({ topic }, context) => {
    const resumeData = context?.agent?.resumeData ?? null;
    if (resumeData === null) return await context.agent.suspend({ question: `About ${topic}?` });
    return { topic, colour: resumeData.colour };
  },
});

const echo = new Agent({
  id: 'echo',
  name: 'echo',
  instructions: 'You echo the user.',
  model: mockModel(echoParts),
  memory: new Memory({ options: { lastMessages: 10 } }),
});
const guarded = new Agent({
  id: 'guarded',
  name: 'guarded',
  instructions: 'You are guarded.',
  model: mockModel(echoParts),
  inputProcessors: [forbidden],
});
const approver = new Agent({
  id: 'approver',
  name: 'approver',
  instructions: 'You look things up, with approval.',
  model: mockModel(approverParts),
  tools: { lookup },
  memory: new Memory({ options: { lastMessages: 10 } }),
});

const json = new Agent({
  id: 'json',
  name: 'json',
  instructions: 'You answer in JSON.',
  model: mockModel(jsonParts),
});
const asker = new Agent({
  id: 'asker',
  name: 'asker',
  instructions: 'You ask a person.',
  model: mockModel(askerParts),
  tools: { ask },
});

const mastra = new Mastra({
  agents: { echo, guarded, approver, json, asker },
  storage: new InMemoryStore(),
  logger: false,
  server: { host: '127.0.0.1', port },
});

await createNodeServer(mastra, { studio: false, isDev: true, tools: {} });
console.log(`ready ${port}`);
