/**
 * What the replicas' turn queue adds per turn: time from `enqueue` called to the handler starting,
 * for the in-process queue (SQLite file) and the pg-boss queue (PostgreSQL, fsync on), sequential
 * turns of different conversations (the idle case: one turn in flight), and the hand-over inside
 * one conversation (a turn queued behind another: from the first handler's end to the second's
 * start, which pg-boss gates by completing the first job). The handler drops the turn and returns.
 * Run: npm run build && node dist/bench/turn-queue.js [turns]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { InProcessTurnQueue, type TurnQueue } from '../agent/run/turn-queue.js';
import { parseTurn, type Turn } from '../agent/run/turn.js';
import type { Store } from '../agent/store/types.js';
import { startBenchPostgres } from './postgres-server.js';

const N = Number(process.argv[2] ?? 200);
const turn = (c: string): Turn => ({ agentName: 'a', conversationKey: c, platform: 'console', sender: { id: 'u' }, text: 'x' });
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(2)} ms, p99 ${pct(xs, 99).toFixed(2)} ms`;

async function measure(label: string, store: Store, queue: TurnQueue): Promise<void> {
  let started: ((t: number) => void) | undefined;
  let ended = 0;
  queue.start(async (conv, q) => {
    started?.(performance.now());
    await store.runs.dropTurn(conv, q.id);
    ended = performance.now();
  });
  const enqueueToStart: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const got = new Promise<number>((r) => (started = r));
    await queue.enqueue(`bench:${i}`, { id: randomUUID(), turn: turn(`bench:${i}`) });
    enqueueToStart.push((await got) - t0);
    await queue.idle();
  }
  // Two turns of one conversation: the gap between the first's end and the second's start.
  const handOver: number[] = [];
  for (let i = 0; i < Math.min(N, 100); i++) {
    const c = `pair:${i}`;
    let n = 0;
    const second = new Promise<number>((r) => (started = () => (++n === 2 ? r(performance.now()) : undefined)));
    await queue.enqueue(c, { id: randomUUID(), turn: turn(c) });
    await queue.enqueue(c, { id: randomUUID(), turn: turn(c) });
    const s2 = await second;
    handOver.push(s2 - ended);
    await queue.idle();
  }
  console.log(`${label}: enqueue -> handler start ${fmt(enqueueToStart)}; one conversation's next turn after the previous ended ${fmt(handOver)}`);
  await queue.close(1000);
}

const dir = mkdtempSync(join(tmpdir(), 'gh-bench-queue-'));
try {
  const { openSqliteStore } = await import('../agent/store/sqlite/index.js');
  const sqlite = await openSqliteStore({ path: join(dir, 's.sqlite'), log: () => undefined });
  await measure('in-process queue, SQLite', sqlite, new InProcessTurnQueue({ runs: sqlite.runs, parse: parseTurn }));
  await sqlite.close();
  const pg = await startBenchPostgres();
  try {
    const { openPostgresStore } = await import('../agent/store/postgres/index.js');
    const store = await openPostgresStore({ url: pg.url, log: () => undefined });
    const queue = await store.turnQueue!({ owner: 'bench', parse: parseTurn, capacity: 8 });
    await measure('pg-boss queue, PostgreSQL', store, queue);
    await store.close();
  } finally {
    await pg.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
