/**
 * Benchmark (not a test): what a turn costs as ONE conversation grows to 3,000 turns, on the whole
 * path (router -> runner -> loop -> store -> events), on SQLite and on PostgreSQL. The model answers
 * at once in this process, so what is measured is Gatehouse's own work.
 *
 * Per window of 50 turns (around turn 3 and around turn 3,000) it prints turns/s (one turn at a
 * time: each waits for the previous answer), main-thread CPU per turn, store round trips per turn
 * (every repository call and checkpoint, counted at the Store seam) and bytes the engine wrote per
 * turn (SQLite: WAL growth with background checkpoints held off; PostgreSQL: WAL bytes of the
 * store's own database, pg_walinspect).
 *
 * The comparison the target is checked on is interleaved: once the conversation is at turn 3,000,
 * its turns alternate with turn 3 of fresh conversations (each given its first two turns just
 * before), so both are measured in the same seconds. The two windows above are minutes apart, and on
 * a shared machine their ratio moves with whatever else ran then (0.7x-1.5x between runs).
 *
 * PostgreSQL: --postgres <admin url> (a database is created on it), or by default a private
 * embedded server (bench/postgres-server.ts).
 *
 * Run: node --import ./test/helpers/register-ts.mjs bench/long-conversation.ts [--turns 3000] [--engines sqlite,postgres]
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Adapter, AdapterSink, ConversationRef } from '../adapters/types.js';
import type { AgentEvent } from '../agent/events.js';
import type { ModelClient } from '../agent/model/types.js';
import { startBenchPostgres } from './postgres-server.js';
import { createDatabase, currentWalLsn, databaseWalBytesSince } from '../agent/store/postgres/admin.js';
import { openPostgresStore } from '../agent/store/postgres/index.js';
import { openSqliteStore } from '../agent/store/sqlite/index.js';
import type { Store } from '../agent/store/types.js';
import { builtinToolNames } from '../agent/tools/catalog.js';
import { createGatehouse } from '../bot/service/app.js';
import { loadConfig } from '../bot/config/index.js';

class OneChatAdapter implements Adapter {
  readonly platform = 'console' as const;
  readonly streamsText = false;
  sink!: AdapterSink;
  onFinished: () => void = () => undefined;
  async start(sink: AdapterSink) {
    this.sink = sink;
  }
  async stop() {}
  decodeKey(key: string): ConversationRef {
    return { platform: 'console', key, channelId: key.slice(8) };
  }
  async render(_ref: ConversationRef, e: AgentEvent) {
    if (e.type === 'run_finished') this.onFinished();
  }
  async postCard() {
    return 'x';
  }
  async updateCard() {}
  async postText() {}
}

const reply = 'A reply of a typical length, with a sentence or two of content in it. '.repeat(4);
const instantModel: ModelClient = {
  async complete() {
    return {
      content: [{ type: 'text', text: reply }],
      stopReason: 'end_turn',
      usage: { inputTokens: 10, outputTokens: 60, cacheReadTokens: 0, cacheWriteTokens: 0, costUSD: 0, costKnown: true },
    };
  },
};

/** The store with every repository call and checkpoint counted (one call = one round trip to the engine). */
function counted(store: Store): { store: Store; calls: () => number } {
  let n = 0;
  const wrap = <T extends object>(repo: T): T =>
    new Proxy(repo, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          n++;
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const wrapped: Store = {
    engine: store.engine,
    description: store.description,
    transcripts: wrap(store.transcripts),
    runs: wrap(store.runs),
    approvals: wrap(store.approvals),
    allowlists: wrap(store.allowlists),
    events: wrap(store.events),
    memory: wrap(store.memory),
    reminders: wrap(store.reminders),
    cache: wrap(store.cache),
    spend: wrap(store.spend),
    leases: wrap(store.leases),
    signals: store.signals,
    checkpoint: (c) => (n++, store.checkpoint(c)),
    ping: (t) => store.ping(t),
    leadership: (role, o) => store.leadership(role, o),
    close: () => store.close(),
  };
  return { store: wrapped, calls: () => n };
}

interface Engine {
  name: string;
  store: Store;
  /** Bytes the engine has written so far (a counter read before and after a window). */
  bytes(): Promise<number>;
  close(): Promise<void>;
}

async function sqliteEngine(dir: string): Promise<Engine> {
  const path = join(dir, 'store.sqlite');
  // Background checkpoints held off: the WAL only grows, so its growth is what was written.
  const store = await openSqliteStore({ path, log: () => undefined, checkpointMs: 3_600_000 });
  return { name: 'sqlite', store, bytes: async () => statSync(`${path}-wal`).size, close: () => store.close() };
}

async function postgresEngine(adminUrl: string | undefined): Promise<Engine> {
  let stopServer: () => Promise<void> = async () => undefined;
  if (!adminUrl) {
    const server = await startBenchPostgres();
    adminUrl = server.url;
    stopServer = () => server.stop();
  }
  const url = await createDatabase(adminUrl, `bench_${process.pid}_${Date.now()}`);
  const store = await openPostgresStore({ url, log: () => undefined });
  const origin = await currentWalLsn(url);
  return {
    name: 'postgres',
    store,
    bytes: () => databaseWalBytesSince(url, origin),
    async close() {
      await store.close();
      await stopServer();
    },
  };
}

async function bench(engine: Engine, dir: string, turns: number): Promise<void> {
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [get_time]\n    workspace: "${join(dir, 'ws')}"\naccess:\n  rateLimit: { messages: 10000, perSeconds: 1 }\n`,
  );
  const config = loadConfig({
    env: { ANTHROPIC_API_KEY: 'bench', GATEHOUSE_STORE: `sqlite://${join(dir, 'unused.sqlite')}` },
    cwd: dir,
    knownTools: builtinToolNames(),
  });
  const { store, calls } = counted(engine.store);
  const adapter = new OneChatAdapter();
  const gh = await createGatehouse({ config, store, model: instantModel, adapters: [adapter], log: () => undefined });
  await gh.start();
  let event = 0;
  const turn = (i: number, key = 'console:long') =>
    new Promise<void>((resolve, reject) => {
      adapter.onFinished = resolve;
      adapter.sink
        .message({
          platform: 'console',
          conversation: adapter.decodeKey(key),
          sender: { id: 'u1' },
          text: `question ${i}: what about the next step?`,
          attachments: [],
          isDirect: true,
          mentionsBot: true,
          eventId: `e${event++}`,
        })
        .catch(reject);
    });
  // Warm-up in another conversation (JIT, pages, pool connections): not measured.
  for (let i = 0; i < 300; i++) await turn(i, 'console:warm-up');
  const window = 50;
  const rows: Array<{ at: number; perSec: number; cpuMs: number; trips: number; bytes: number }> = [];
  for (let i = 1; i <= turns; ) {
    const measure = i === 1 || i + window > turns;
    const n = measure ? window : Math.min(500, turns - window - i + 1);
    const t0 = performance.now();
    const cpu = process.cpuUsage();
    const trips0 = calls();
    const bytes0 = measure ? await engine.bytes() : 0;
    for (let k = 0; k < n; k++) await turn(i + k);
    if (measure) {
      const ms = performance.now() - t0;
      const c = process.cpuUsage(cpu);
      const bytes = (await engine.bytes()) - bytes0;
      rows.push({ at: i, perSec: (n / ms) * 1000, cpuMs: (c.user + c.system) / 1000 / n, trips: (calls() - trips0) / n, bytes: bytes / n });
    }
    i += n;
  }
  // Interleaved: turn ~3,000 of the long conversation against turn 3 of a fresh one, in pairs
  // whose order alternates (ABBA), so drift on the machine falls on both alike.
  const pairs = 400;
  const long: Sample[] = [];
  const short: Sample[] = [];
  const sample = async (i: number, key: string): Promise<Sample> => {
    const bytes0 = await engine.bytes();
    const trips0 = calls();
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    await turn(i, key);
    const ms = performance.now() - t0;
    const c = process.cpuUsage(cpu);
    return { ms, cpuMs: (c.user + c.system) / 1000, trips: calls() - trips0, bytes: (await engine.bytes()) - bytes0 };
  };
  for (let j = 0; j < pairs; j++) {
    const key = `console:short-${j}`;
    await turn(1, key);
    await turn(2, key);
    if (j % 2 === 0) {
      long.push(await sample(turns + 1 + j, 'console:long'));
      short.push(await sample(3, key));
    } else {
      short.push(await sample(3, key));
      long.push(await sample(turns + 1 + j, 'console:long'));
    }
  }
  await gh.stop();
  for (const r of rows) {
    console.log(
      `  ${engine.name.padEnd(8)} turns ${String(r.at).padStart(4)}-${String(r.at + window - 1).padEnd(4)} ${r.perSec.toFixed(0).padStart(5)} turns/s  ` +
        `${r.cpuMs.toFixed(2)} ms CPU/turn  ${r.trips.toFixed(1)} store round trips/turn  ${(r.bytes / 1024).toFixed(1)} KB written/turn`,
    );
  }
  const [first, last] = [rows[0]!, rows[rows.length - 1]!];
  console.log(
    `  ${engine.name}: windows minutes apart: time per turn at turn ~${last.at} is ${(first.perSec / last.perSec).toFixed(2)}x turn ~${first.at}; bytes per turn ${(last.bytes / first.bytes).toFixed(2)}x`,
  );
  const [l, sh] = [summarize(long), summarize(short)];
  const describe = (what: string, x: Summary) =>
    `    ${what.padEnd(26)} ${x.medianMs.toFixed(2)} ms median, ${x.meanMs.toFixed(2)} ms mean, ${x.cpuMs.toFixed(2)} ms CPU, ${x.trips.toFixed(1)} round trips, ${(x.bytes / 1024).toFixed(1)} KB written per turn`;
  console.log(`  ${engine.name}, interleaved (${pairs} pairs, the same seconds):`);
  console.log(describe(`turn ~${turns + pairs / 2} of the long one`, l));
  console.log(describe('turn 3 of a fresh one', sh));
  // The median: a pause of the machine (another job, a GC of the whole heap) lands on one turn of
  // either kind and moves a mean of 200 by more than the difference measured here.
  const ratio = l.medianMs / sh.medianMs;
  const bytesRatio = l.bytes / sh.bytes;
  console.log(
    `  ${engine.name}: a turn at turn ~${turns} costs ${ratio.toFixed(2)}x (median; mean ${(l.meanMs / sh.meanMs).toFixed(2)}x, CPU ${(l.cpuMs / sh.cpuMs).toFixed(2)}x) one at turn 3, ` +
      `and writes ${bytesRatio.toFixed(2)}x the bytes. Target within 1.25x: ${ratio <= 1.25 && bytesRatio <= 1.25 ? 'MET' : 'MISSED'}`,
  );
}

interface Sample {
  ms: number;
  cpuMs: number;
  trips: number;
  bytes: number;
}

interface Summary {
  medianMs: number;
  meanMs: number;
  cpuMs: number;
  trips: number;
  bytes: number;
}

function summarize(xs: Sample[]): Summary {
  const mean = (f: (s: Sample) => number) => xs.reduce((a, s) => a + f(s), 0) / xs.length;
  const sorted = xs.map((s) => s.ms).sort((a, b) => a - b);
  return {
    medianMs: sorted[Math.floor(sorted.length / 2)]!,
    meanMs: mean((s) => s.ms),
    cpuMs: mean((s) => s.cpuMs),
    trips: mean((s) => s.trips),
    bytes: mean((s) => s.bytes),
  };
}

const args = process.argv.slice(2);
const arg = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : dflt;
};
const turns = Number(arg('turns', '3000'));
console.log(`long conversation benchmark: node ${process.version}, one conversation, ${turns} turns, model answering at once`);
for (const name of arg('engines', 'sqlite,postgres').split(',')) {
  const dir = mkdtempSync(join(tmpdir(), 'gh-bench-long-'));
  const engine = name === 'postgres' ? await postgresEngine(args.includes('--postgres') ? arg('postgres', '') : undefined) : await sqliteEngine(dir);
  try {
    await bench(engine, dir, turns);
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
