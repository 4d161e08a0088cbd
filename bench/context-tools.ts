/**
 * Cost per call (median of N) of context_info and summarize_context, called as the executor calls
 * them (input parse, then execute) over a run's context keeper. summarize_context makes its summary
 * call through the real Anthropic client to the fake model server on 127.0.0.1, so its number is the
 * tool's own work plus one local HTTP round trip (a real model adds its own latency on top).
 * Run: npm run build && node dist/bench/context-tools.js
 */
import { performance } from 'node:perf_hooks';
import { ContextKeeper, type SummaryRecord } from '../agent/context/keeper.js';
import type { Message } from '../agent/context/messages.js';
import { createAnthropicModel } from '../agent/model/anthropic.js';
import { emptyUsage } from '../agent/model/pricing.js';
import { contextInfoTool, summarizeContextTool } from '../agent/tools/builtin/context-tools.js';
import type { AnyTool, ToolContext } from '../agent/tools/types.js';
import { freezeMessage } from '../agent/context/transcript-diff.js';
import { startFakeAnthropic } from '../test/fakes/anthropic.js';

const N = Number(process.env['N'] ?? 200);

/** `turns` turns of a user text, a tool call and its result, and an answer (4 messages each), then a summarize_context call. */
function transcript(turns: number): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < turns; i++) {
    out.push({ role: 'user', content: [{ type: 'text', text: `question ${i} ${'lorem ipsum '.repeat(40)}` }] });
    out.push({ role: 'assistant', content: [{ type: 'tool_use', id: `t${i}`, name: 'read_file', input: { path: `f${i}.txt` } }] });
    out.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: 'x'.repeat(2000) }] });
    out.push({ role: 'assistant', content: [{ type: 'text', text: `answer ${i}` }] });
  }
  out.push({ role: 'user', content: [{ type: 'text', text: 'compact your context' }] });
  out.push({ role: 'assistant', content: [{ type: 'tool_use', id: 'sc', name: 'summarize_context', input: {} }] });
  return out.map(freezeMessage); // stored messages are frozen
}

const fake = await startFakeAnthropic({ apiKey: 'k' });
fake.recordRequests = false;
fake.setHandler(() => ({ text: 'SUMMARY: the earlier turns read files f0..fN.' }));
const model = createAnthropicModel({ apiKey: 'k', baseURL: fake.url, retryBaseMs: 5, maxRetryWaitMs: 100 });

function contextFor(messages: Message[]): ToolContext {
  let history: SummaryRecord[] = [];
  const keeper = new ContextKeeper({ model, modelName: 'claude-sonnet-5-5', history: { get: () => history, set: (v) => (history = v) } });
  keeper.noteUsage({ ...emptyUsage(), inputTokens: 12_000 }, messages.length - 1);
  const signal = new AbortController().signal;
  return {
    workspace: '/tmp',
    signal,
    conversationKey: 'bench',
    agentName: 'bench',
    envAllowlist: [],
    state: { get: () => undefined, set: () => undefined },
    context: {
      info: () => keeper.info(messages),
      compact: (focus) => keeper.compact(messages, { signal, addUsage: () => undefined, ...(focus ? { focus } : {}) }),
    },
  };
}

async function median(label: string, tool: AnyTool, input: unknown, ctxFor: () => ToolContext): Promise<void> {
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const ctx = ctxFor();
    const t = performance.now();
    const res = await tool.execute(tool.input.parse(input), ctx, {});
    times.push(performance.now() - t);
    if (res.isError) throw new Error(`${label}: ${JSON.stringify(res.content)}`);
  }
  times.sort((a, b) => a - b);
  console.log(`${label.padEnd(52)} median ${times[Math.floor(N / 2)]!.toFixed(3)} ms  p90 ${times[Math.floor(N * 0.9)]!.toFixed(3)} ms  (n=${N})`);
}

const info = contextInfoTool() as unknown as AnyTool;
const summarize = summarizeContextTool() as unknown as AnyTool;
for (const turns of [5, 50, 250]) {
  const base = transcript(turns);
  const shared = contextFor(base);
  await median(`context_info (${base.length} messages)`, info, {}, () => shared);
  // compact changes the transcript in place: every call gets a fresh copy (messages shared, frozen).
  await median(`summarize_context (${base.length} messages, fake model)`, summarize, { focus: 'the file names' }, () => contextFor([...base]));
}
await fake.close();
