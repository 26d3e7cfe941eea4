// Detector calls Mastra 1.71's LLM guardrails make for a streamed answer of 50 and 500 chunks,
// with the same mock detector and answer as benchmarks/guardrails.py. To run it:
//   mkdir /tmp/mastra-bench && cp ../shared/conformance/package.json benchmarks/mastra_guardrail_calls.mjs /tmp/mastra-bench
//   cd /tmp/mastra-bench && npm install && node mastra_guardrail_calls.mjs
// Measured (1.71.0): Moderation 51 / 501, PIIDetector 2 / 16, SystemPromptScrubber 51 / 501.
import { Agent } from '@mastra/core/agent';
import { noopLogger } from '@mastra/core/logger';
import { ModerationProcessor, PIIDetector, SystemPromptScrubber } from '@mastra/core/processors';
import { MockLanguageModelV2, simulateReadableStream } from 'ai/test';

const VOCAB = ['The ', 'report ', 'shows ', 'steady ', 'growth ', 'across ', 'regions, ', 'and ', 'more. '];
const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

function detector(answer, counter) {
  const parts = () => [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 'd' },
    { type: 'text-delta', id: 'd', delta: JSON.stringify(answer) },
    { type: 'text-end', id: 'd' },
    { type: 'finish', finishReason: 'stop', usage },
  ];
  return new MockLanguageModelV2({
    doStream: async () => { counter.n++; return { stream: simulateReadableStream({ chunks: parts(), initialDelayInMs: null, chunkDelayInMs: null }) }; },
    doGenerate: async () => { counter.n++; return { content: [{ type: 'text', text: JSON.stringify(answer) }], finishReason: 'stop', usage, warnings: [] }; },
  });
}

function main(chunks) {
  const deltas = Array.from({ length: chunks }, (_, i) => VOCAB[i % VOCAB.length]);
  const parts = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
    ...deltas.map(d => ({ type: 'text-delta', id: 't', delta: d })),
    { type: 'text-end', id: 't' },
    { type: 'finish', finishReason: 'stop', usage },
  ];
  return new MockLanguageModelV2({
    doStream: async () => ({ stream: simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: null }) }),
  });
}

const GUARDS = {
  ModerationProcessor: (model) => new ModerationProcessor({ model }),
  PIIDetector: (model) => new PIIDetector({ model }),
  SystemPromptScrubber: (model) => new SystemPromptScrubber({ model }),
};
const CLEAN = {
  ModerationProcessor: { category_scores: [] },
  PIIDetector: { categories: [], detections: [] },
  SystemPromptScrubber: { detections: [] },
};

for (const [name, make] of Object.entries(GUARDS)) {
  for (const chunks of [50, 500]) {
    const counter = { n: 0 };
    const agent = new Agent({ name: 'b', instructions: 'x', model: main(chunks), outputProcessors: [make(detector(CLEAN[name], counter))] });
    agent.__setLogger?.(noopLogger);
    const out = await agent.stream('go');
    let text = '';
    for await (const c of out.fullStream) if (c.type === 'text-delta') text += c.payload.text;
    console.log(`${name.padEnd(22)}${String(chunks).padStart(7)}${String(counter.n).padStart(7)}  (${text.length} chars out)`);
  }
}
