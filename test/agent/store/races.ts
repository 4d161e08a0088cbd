/**
 * Races across real processes, for any engine: N concurrent decideOnce / events.claim /
 * reminders.swap from several child processes (race-child.ts) on the same store; exactly one
 * winner per item. `describeStoreRaces` takes a function that opens a fresh store here and says how
 * another process opens the same one.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Store } from '../../../agent/store/types.js';

export type StoreFactory = { engine: 'sqlite'; path: string } | { engine: 'postgres'; url: string };

export interface RacePlan {
  now: number;
  conversation: string;
  approvals: string[];
  events: string[];
  reminders: string[];
}

export type OpenShared = () => Promise<{ store: Store; factory: StoreFactory }>;

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const child = join(here, 'race-child.ts');

interface Child {
  ready: Promise<void>;
  done: Promise<Record<string, string[]>>;
  go(): void;
}

function startChild(factory: StoreFactory, plan: RacePlan): Child {
  const p = spawn(process.execPath, ['--import', register, child, JSON.stringify(factory), JSON.stringify(plan)], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  p.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (out.startsWith('ready\n')) onReady();
  });
  p.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const done = new Promise<Record<string, string[]>>((resolve, reject) => {
    p.on('exit', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !last.startsWith('{')) return reject(new Error(`race child exited ${code}: ${err || out}`));
      resolve(JSON.parse(last) as Record<string, string[]>);
    });
  });
  // A child that fails before "ready" must fail the test, not hang it.
  const readyOrFail = Promise.race([ready, done.then(() => undefined)]);
  return { ready: readyOrFail, done, go: () => p.stdin.end('go\n') };
}

export function describeStoreRaces(engineName: string, openShared: OpenShared, opts: { processes?: number; n?: number } = {}): void {
  const processes = opts.processes ?? 3;
  const n = opts.n ?? 20;
  describe(`${engineName} store: races across ${processes} processes`, () => {
    test(`${n} concurrent decideOnce, events.claim and reminders.swap: exactly one winner each`, async () => {
      const { store, factory } = await openShared();
      const tag = randomBytes(4).toString('hex');
      const now = 1_800_000_000_000;
      const conversation = `race:${tag}`;
      const ids = (kind: string) => Array.from({ length: n }, (_, i) => `${kind}-${tag}-${i}`);
      const plan: RacePlan = { now, conversation, approvals: ids('req'), events: ids('ev'), reminders: ids('rem') };
      try {
        for (const id of plan.approvals)
          await store.approvals.create({ id, conversation, request: { id }, tokens: [], createdAt: now, keepUntil: now + 60_000 });
        for (const id of plan.reminders) await store.reminders.put({ id, conversation, dueAt: now, rev: 1, reminder: {} });
        const children = Array.from({ length: processes }, () => startChild(factory, plan));
        await Promise.all(children.map((c) => c.ready));
        for (const c of children) c.go();
        const results = await Promise.all(children.map((c) => c.done));
        for (const [op, all] of [
          ['decideOnce', plan.approvals],
          ['claim', plan.events],
          ['swap', plan.reminders],
        ] as const) {
          const wins = results.flatMap((r) => r[op] ?? []);
          expect(wins.sort()).toEqual([...all].sort());
        }
        // The winner's writes are what is stored.
        for (const id of plan.approvals) expect((await store.approvals.get(id, now))?.decision).toBeDefined();
        for (const id of plan.reminders) expect((await store.reminders.get(id))?.rev).toBe(2);
      } finally {
        await store.close();
      }
    }, 60_000);
  });
}
