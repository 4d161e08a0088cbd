/**
 * Benchmark (not a test): the agent core's throughput and per-turn overhead, and memory per idle
 * conversation. The whole path runs: adapter seam -> router (dedupe, access, rate limit) -> runner
 * lane -> loop -> SQLite transcript store -> events back to the adapter.
 *
 * Two model modes, with the model answering at once:
 *   http:    the real Anthropic SDK streaming from the fake Messages server (in a child process, so
 *            it does not share this process's core)
 *   inproc:  a ModelClient that returns at once: the runner's own cost, with no HTTP at all
 * turns/s from a burst; overhead per turn (run_started -> run_finished minus the time inside the
 * model call) from a paced phase at --pace turns/s (default 200), so it is not queueing behind a burst.
 *
 * Run: npm run build && node --expose-gc dist/bench/agent-core.js [--turns 3000] [--modes http,inproc]
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Adapter, AdapterSink, ConversationRef } from '../adapters/types.js';
import type { AgentEvent, Card } from '../agent/events.js';
import { createAnthropicModel } from '../agent/model/anthropic.js';
import type { ModelClient } from '../agent/model/types.js';
import { builtinToolNames } from '../agent/tools/catalog.js';
import { createGatehouse } from '../bot/service/app.js';
import { loadConfig } from '../bot/config/index.js';
import { openStore } from '../bot/service/storage.js';

class BenchAdapter implements Adapter {
  readonly platform = 'console' as const;
  /** Streams, as the terminal chat does (the HTTP rows then measure the SDK's streaming path). */
  readonly streamsText = true;
  sink!: AdapterSink;
  started = new Map<string, number>();
  onFinished: (runId: string, startedAt: number, endedAt: number) => void = () => undefined;
  async start(sink: AdapterSink) {
    this.sink = sink;
  }
  async stop() {}
  decodeKey(key: string): ConversationRef {
    return { platform: 'console', key, channelId: key.slice(8) };
  }
  async render(_ref: ConversationRef, e: AgentEvent) {
    if (e.type === 'run_started') this.started.set(e.runId, performance.now());
    if (e.type === 'run_finished') {
      const s = this.started.get(e.runId)!;
      this.started.delete(e.runId);
      this.onFinished(e.runId, s, performance.now());
    }
  }
  async postCard(_r: ConversationRef, _c: Card) {
    return 'x';
  }
  async updateCard() {}
  async postText() {}
}

/** Wraps a model client to report the time spent inside each call. */
function timed(model: ModelClient, onCall: (ms: number) => void): ModelClient {
  return {
    async complete(req) {
      const t0 = performance.now();
      try {
        return await model.complete(req);
      } finally {
        onCall(performance.now() - t0);
      }
    },
  };
}

const instantModel: ModelClient = {
  async complete() {
    return {
      content: [{ type: 'text', text: 'ok' }],
      stopReason: 'end_turn',
      usage: { inputTokens: 10, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costUSD: 0.00003, costKnown: true },
    };
  },
};

async function startFakeProcess(): Promise<{ url: string; kill(): void }> {
  const here = dirname(fileURLToPath(import.meta.url));
  const child = fork(join(here, 'fake-model-process.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (m) => resolve(String(m)));
    child.once('exit', (code) => reject(new Error(`fake model process exited (${code})`)));
  });
  return { url, kill: () => child.kill() };
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function setup(dir: string, model: ModelClient, maxConversations: number) {
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [get_time]\n    workspace: "${join(dir, 'ws')}"\n    retention: { maxConversations: ${maxConversations} }\naccess:\n  rateLimit: { messages: 10000, perSeconds: 1 }\nrunner: { maxConcurrentRuns: 64 }\n`,
  );
  const config = loadConfig({
    env: { ANTHROPIC_API_KEY: 'bench', GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}` },
    cwd: dir,
    knownTools: builtinToolNames(),
  });
  const store = await openStore(config.store);
  const adapter = new BenchAdapter();
  const gh = await createGatehouse({ config, store, model, adapters: [adapter], log: () => undefined });
  await gh.start();
  return { gh, adapter, storage: store };
}

let eventSeq = 0;
function send(adapter: BenchAdapter, conversation: number, turn: number) {
  const key = `console:c${conversation}`;
  return adapter.sink.message({
    platform: 'console',
    conversation: adapter.decodeKey(key),
    sender: { id: `u${conversation}` },
    text: `c${conversation} t${turn}`,
    attachments: [],
    isDirect: true,
    mentionsBot: true,
    eventId: `e${eventSeq++}`,
  });
}

/**
 * One row: a burst (every conversation's turns offered at once) gives turns/s; then a paced phase
 * (turns offered at `paceRate`/s, round-robin over the conversations) gives the per-turn overhead
 * without the queueing a burst adds: run_started -> run_finished minus the time inside the model.
 */
async function throughput(mode: string, model: ModelClient, conversations: number, turns: number, paceRate: number) {
  const dir = mkdtempSync(join(tmpdir(), 'gh-bench-'));
  let modelMs = 0;
  let modelCalls = 0;
  const { gh, adapter, storage } = await setup(
    dir,
    timed(model, (ms) => ((modelMs += ms), modelCalls++)),
    Math.max(100, conversations),
  );
  // Warm-up: JIT, SQLite pages.
  for (let i = 0; i < 50; i++) await send(adapter, 999_999, i);
  await gh.runner.idle();

  const run = async (offer: () => Promise<void>, count: number) => {
    const durations: number[] = [];
    modelMs = 0;
    modelCalls = 0;
    const done = new Promise<void>((resolve) => {
      adapter.onFinished = (_id, s, e) => {
        durations.push(e - s);
        if (durations.length === count) resolve();
      };
    });
    const t0 = performance.now();
    await offer();
    await done;
    const elapsed = (performance.now() - t0) / 1000;
    const modelPerTurn = modelCalls ? modelMs / modelCalls : 0;
    return { elapsed, durations, modelPerTurn };
  };

  const perConv = Math.ceil(turns / conversations);
  const burst = await run(async () => {
    for (let t = 0; t < perConv; t++) {
      const round: Array<Promise<unknown>> = [];
      for (let c = 0; c < conversations && t * conversations + c < turns; c++) round.push(send(adapter, c, t));
      await Promise.all(round);
    }
  }, turns);

  const paced = await run(async () => {
    const gap = 1000 / paceRate;
    const start = performance.now();
    for (let i = 0; i < turns; i++) {
      const due = start + i * gap;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      void send(adapter, i % conversations, perConv + Math.floor(i / conversations));
    }
  }, turns);
  const over = paced.durations.map((d) => Math.max(0, d - paced.modelPerTurn)).sort((a, b) => a - b);
  console.log(
    `${mode.padEnd(6)} ${String(conversations).padStart(5)} conv  ${String(turns).padStart(6)} turns  ` +
      `burst ${(turns / burst.elapsed).toFixed(0).padStart(5)} turns/s   ` +
      `paced ${paceRate}/s: overhead p50 ${pct(over, 50).toFixed(2)} ms p99 ${pct(over, 99).toFixed(2)} ms (model ${paced.modelPerTurn.toFixed(2)} ms/turn)`,
  );
  await gh.stop();
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
}

async function memory(count: number) {
  const dir = mkdtempSync(join(tmpdir(), 'gh-bench-mem-'));
  const { gh, adapter, storage } = await setup(dir, instantModel, count);
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 200; i++) await send(adapter, 1_000_000 + i, 0);
  await gh.runner.idle();
  gc?.();
  const before = process.memoryUsage();
  for (let c = 0; c < count; c++) {
    await send(adapter, c, 0);
    if (c % 500 === 499) await gh.runner.idle();
  }
  await gh.runner.idle();
  gc?.();
  await new Promise((r) => setTimeout(r, 200));
  gc?.();
  const after = process.memoryUsage();
  const rssPer = (after.rss - before.rss) / count;
  const heapPer = (after.heapUsed - before.heapUsed) / count;
  console.log(
    `memory ${count} idle conversations: RSS +${((after.rss - before.rss) / 1048576).toFixed(1)} MB ` +
      `(${(rssPer / 1024).toFixed(2)} KB/conversation), heap +${((after.heapUsed - before.heapUsed) / 1048576).toFixed(1)} MB ` +
      `(${(heapPer / 1024).toFixed(2)} KB/conversation)${gc ? '' : '  [run with --expose-gc for stable numbers]'}`,
  );
  await gh.stop();
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
}

async function main() {
  const args = process.argv.slice(2);
  const arg = (name: string, dflt: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1]! : dflt;
  };
  if (args.includes('--memory-only')) return memory(Number(arg('conversations', '10000')));
  const turns = Number(arg('turns', '3000'));
  const modes = arg('modes', 'http,inproc').split(',');
  console.log(`agent core benchmark: node ${process.version}, ${turns} turns per row`);
  for (const mode of modes) {
    let model = instantModel;
    let fake: { url: string; kill(): void } | undefined;
    if (mode === 'http') {
      fake = await startFakeProcess();
      model = createAnthropicModel({ apiKey: 'bench', baseURL: fake.url, maxRetries: 0 });
    }
    for (const conv of [1, 100, 1000]) await throughput(mode, model, conv, Math.max(turns, conv), Number(arg('pace', '200')));
    fake?.kill();
  }
  // Memory in a fresh process: the throughput rows above leave a grown heap behind.
  const child = fork(fileURLToPath(import.meta.url), ['--memory-only', '--conversations', arg('conversations', '10000')], {
    execArgv: ['--expose-gc'],
    stdio: 'inherit',
  });
  await new Promise((r) => child.once('exit', r));
}

await main();
