/**
 * What a spawn_subagent call costs (median of N), through the executor as a run calls it (gate,
 * propose, execute), with the real Anthropic client against the fake model server on 127.0.0.1:
 * - one bare model call through the loop (the floor of any sub-agent: one local round trip);
 * - a spawn whose sub-agent answers at once (one model call): minus the bare call, the spawn's own overhead;
 * - a spawn whose sub-agent runs get_time and then answers (two model calls, one tool call);
 * - get_time alone through the executor, for scale.
 * Run: npm run build && node dist/bench/subagent.js
 */
import { performance } from 'node:perf_hooks';
import type { ApprovalBroker } from '../agent/approvals/index.js';
import { runLoop } from '../agent/run/loop.js';
import type { Message, ToolUseBlock } from '../agent/context/messages.js';
import { createAnthropicModel } from '../agent/model/anthropic.js';
import type { AgentSettings } from '../agent/settings.js';
import { SubagentSession } from '../agent/tools/builtin/subagent/host.js';
import { builtinRegistry } from '../agent/tools/catalog.js';
import { runToolBatch, type BatchContext, type CallState } from '../agent/tools/executor.js';
import type { ToolContext } from '../agent/tools/types.js';
import { startFakeAnthropic, type FakeReply } from '../test/fakes/anthropic.js';

const N = Number(process.env['N'] ?? 200);
const fake = await startFakeAnthropic({ apiKey: 'k' });
fake.recordRequests = false;
const script: FakeReply[] = [];
fake.setHandler(() => script.shift() ?? { text: 'done' });
const model = createAnthropicModel({ apiKey: 'k', baseURL: fake.url, retryBaseMs: 5, maxRetryWaitMs: 100 });

const agent = {
  name: 'bench',
  model: 'claude-sonnet-5-5',
  system: 'You are a bench.',
  maxTokens: 1024,
  maxIterations: 10,
  tools: ['get_time', 'spawn_subagent'],
} as const;
const tools = builtinRegistry().toolset(agent.tools, { humanAvailable: false });

/** A parent batch at tier high-risk: every call is allowed, so no card and no broker call. */
function parentBatch(): { batch: BatchContext; session: SubagentSession } {
  const states = new Map<string, CallState>();
  const session = new SubagentSession({ runId: 'bench', agent: () => agent as unknown as AgentSettings, model, addUsage: () => undefined });
  const batch: BatchContext = {
    runId: 'bench',
    conversationKey: 'bench:1',
    platform: 'cli',
    agentName: agent.name,
    tools,
    toolContext: (id, signal): ToolContext => ({
      workspace: '/tmp',
      signal,
      conversationKey: 'bench:1',
      agentName: agent.name,
      envAllowlist: [],
      state: { get: () => undefined, set: () => undefined },
      subagents: session.runner(0, tools, () => batch, id),
    }),
    policy: () => ({ name: agent.name, tier: 'high-risk', autoApprovedTools: [], autoApprovedCommands: [], approvers: {} }),
    classify: async () => ({ tier: 'high-risk' }),
    broker: undefined as unknown as ApprovalBroker, // never reached: nothing asks at tier high-risk
    approvalTimeoutMs: 60_000,
    emit: async () => undefined,
    signal: new AbortController().signal,
    states: { get: (id) => states.get(id), set: async (id, s) => void states.set(id, s) },
    addAlways: async () => undefined,
    humanWait: (w) => w(),
  };
  return { batch, session };
}

async function median(label: string, once: (i: number) => Promise<void>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await once(i);
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const m = times[Math.floor(N / 2)]!;
  console.log(`${label.padEnd(58)} median ${m.toFixed(3)} ms  p90 ${times[Math.floor(N * 0.9)]!.toFixed(3)} ms  (n=${N})`);
  return m;
}

const call = (name: string, input: unknown, i: number): ToolUseBlock[] => [{ type: 'tool_use', id: `c${i}`, name, input }];
const check = (content: unknown, want: string) => {
  if (JSON.stringify(content).indexOf(want) < 0) throw new Error(`unexpected result ${JSON.stringify(content)}`);
};

await median('get_time through the executor', async (i) => {
  const [r] = await runToolBatch(call('get_time', {}, i), parentBatch().batch);
  check(r!.content, 'UTC');
});
const bare = await median('one model call through the loop (no tools)', async () => {
  script.push({ text: 'answer' });
  const messages: Message[] = [{ role: 'user', content: [{ type: 'text', text: 'task' }] }];
  await runLoop({
    runId: 'b',
    model,
    modelName: agent.model,
    system: agent.system,
    tools: [],
    maxTokens: agent.maxTokens,
    maxIterations: 2,
    messages,
    signal: new AbortController().signal,
    emit: async () => undefined,
    streamText: false,
    runBatch: async () => [],
    checkpoint: async () => undefined,
    addUsage: () => undefined,
  });
});
const spawn = await median('spawn_subagent, sub-agent answers at once (1 model call)', async (i) => {
  script.push({ text: 'sub answer' });
  const [r] = await runToolBatch(call('spawn_subagent', { task: 'say hi' }, i), parentBatch().batch);
  check(r!.content, 'sub answer');
});
await median('spawn_subagent, sub-agent runs get_time (2 model calls)', async (i) => {
  script.push({ toolUses: [{ name: 'get_time', input: {} }] }, { text: 'sub answer' });
  const [r] = await runToolBatch(call('spawn_subagent', { task: 'what time is it', tools: ['get_time'] }, i), parentBatch().batch);
  check(r!.content, 'sub answer');
});
console.log(`spawn overhead beyond its model call: ${(spawn - bare).toFixed(3)} ms (median difference)`);
await fake.close();
