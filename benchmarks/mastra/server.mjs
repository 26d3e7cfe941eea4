// Mastra's own server on the same benchmark agent: a mock model answering with 50 text deltas.
import { Mastra } from '@mastra/core/mastra';
import { Agent } from '@mastra/core/agent';
import { createNodeServer } from '@mastra/deployer/server';

const model = {
  specificationVersion: 'v2',
  provider: 'echo',
  modelId: 'echo-1',
  supportedUrls: {},
  async doGenerate() { throw new Error('stream only'); },
  async doStream(options) {
    const last = [...options.prompt].reverse().find((m) => m.role === 'user');
    const text = last ? last.content.map((p) => p.text ?? '').join('') : '';
    const words = `Echo: ${text}`.split(' ');
    while (words.length < 50) words.push('…');
    const size = Math.ceil(words.length / 50);
    const pieces = [];
    for (let i = 0; i < words.length; i += size) pieces.push((i ? ' ' : '') + words.slice(i, i + size).join(' '));
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue({ type: 'stream-start', warnings: [] });
        controller.enqueue({ type: 'text-start', id: 't1' });
        for (const delta of pieces) controller.enqueue({ type: 'text-delta', id: 't1', delta });
        controller.enqueue({ type: 'text-end', id: 't1' });
        controller.enqueue({ type: 'finish', finishReason: 'stop', usage: { inputTokens: 1, outputTokens: pieces.length, totalTokens: pieces.length + 1 } });
        controller.close();
      },
    });
    return { stream };
  },
};

const bench = new Agent({ id: 'bench', name: 'bench', instructions: 'Echo.', model });
const mastra = new Mastra({ agents: { bench }, server: { port: Number(process.env.PORT ?? 4222), host: '127.0.0.1' } });
await createNodeServer(mastra, { tools: {} });
