/**
 * First click wins across processes sharing one store (a SQLite file, and a PostgreSQL database), and
 * every process's waiter is woken: two real node processes (test/helpers/approval-clicker.ts: the
 * real broker on the same engine)
 * each wait on the same approval and click the same button at the same moment, 60 rounds, while this
 * process (a third broker, which never clicks) waits too.
 * Each round exactly one click is accepted, the other is told it was already decided, exactly one
 * decision is stored (the winner's), and every waiter wakes with it: the winner's through its own
 * bus; the loser's when its decideOnce loses and it reads the winner's decision (or by the signal);
 * on PostgreSQL this process's, which never clicks, through the store's signals (LISTEN/NOTIFY, no
 * poll). SQLite is one process per store: its signals stay in the process, so there the test's own
 * waiter is not part of the round.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ApprovalBroker, ApprovalStore, SignalDecisionBus, type ClickResult, type Decision } from '../../agent/approvals/index.js';
import type { Card } from '../../agent/events.js';
import type { Store } from '../../agent/store/types.js';
import { storeFromEnv } from '../../bot/config/env.js';
import { openStore } from '../../bot/service/storage.js';
import { ENGINES, testStoreUrl } from '../helpers/harness.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const clicker = join(root, 'test', 'helpers', 'approval-clicker.ts');
const ROUNDS = 60;

interface Clicker {
  child: ChildProcessWithoutNullStreams;
  next(kind: 'ready' | 'click' | 'woke'): Promise<string>;
}

function startClicker(storeUrl: string): Clicker {
  const child = spawn(process.execPath, ['--import', register, clicker, storeUrl], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = new Map<string, string[]>();
  const waiting = new Map<string, Array<(l: string) => void>>();
  createInterface({ input: child.stdout }).on('line', (l) => {
    const kind = l.split(' ', 1)[0]!;
    const rest = l.slice(kind.length + 1);
    const w = waiting.get(kind)?.shift();
    if (w) w(rest);
    else lines.set(kind, [...(lines.get(kind) ?? []), rest]);
  });
  child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
  return {
    child,
    next: (kind) => {
      const queued = lines.get(kind);
      if (queued?.length) return Promise.resolve(queued.shift()!);
      return new Promise((r) => waiting.set(kind, [...(waiting.get(kind) ?? []), r]));
    },
  };
}

describe.each(ENGINES)('on %s', (engine) => {
  /** The store both clickers and this process share (a restart-free test: one URL per test). */
  let storeUrl: string;

  let dir: string;
  let store: Store;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gh-first-click-'));
    storeUrl = await testStoreUrl(engine, dir);
    store = await openStore(storeFromEnv({ GATEHOUSE_STORE: storeUrl }, dir).store);
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('two processes wait on and click the same button at once, 60 rounds: one decision, every waiter woken with it', async () => {
    const cards: Card[] = [];
    const decisions = new ApprovalStore(store.approvals);
    const bus = new SignalDecisionBus({ signals: store.signals, read: async (id) => (await decisions.get(id))?.decision, safetyReadMs: 0 });
    await store.signals.ready();
    const broker = new ApprovalBroker({
      approvals: store.approvals,
      bus,
      outputs: () => ({ emit: async () => undefined, streamsText: false, postCard: async (c) => String(cards.push(c)), updateCard: async () => undefined }),
      approversOf: () => ['alice', 'bob'],
    });
    const alice = startClicker(storeUrl);
    const bob = startClicker(storeUrl);
    try {
      expect(await alice.next('ready')).toBe('');
      expect(await bob.next('ready')).toBe('');
      const wins = { alice: 0, bob: 0 };
      for (let i = 0; i < ROUNDS; i++) {
        const conversationKey = `telegram:${i}`;
        const id = await broker.askApproval({
          conversationKey,
          platform: 'telegram',
          agentName: 'default',
          runId: `run-${i}`,
          title: 'Run a command?',
          body: 'ls',
          alwaysLabel: null,
          timeoutMs: 600_000,
        });
        const here = engine === 'postgres' ? broker.wait(id) : undefined;
        for (const c of [alice, bob]) c.child.stdin.write(`wait ${id}\n`);
        // The same button for both; alternate Approve / Deny so the stored outcome shows who won.
        const token = cards[i]!.buttons[i % 2]!.token;
        const at = Date.now() + 30;
        alice.child.stdin.write(`click ${at} alice ${token} ${conversationKey}\n`);
        bob.child.stdin.write(`click ${at} bob ${token} ${conversationKey}\n`);
        const a = JSON.parse(await alice.next('click')) as ClickResult;
        const b = JSON.parse(await bob.next('click')) as ClickResult;
        expect([a.accepted, b.accepted].filter(Boolean)).toHaveLength(1);
        const loser = a.accepted ? b : a;
        expect(loser.notice).toMatch(/^Already decided/);
        const winner = a.accepted ? 'alice' : 'bob';
        wins[winner]++;
        const stored = await broker.get(id);
        expect(stored?.decision).toMatchObject({ by: winner, outcome: i % 2 === 0 ? 'approved' : 'denied' });
        expect(await broker.pendingIds(conversationKey)).toEqual([]);
        // Every waiter, in all three processes, woke with the one stored decision.
        const woke = await Promise.all([alice.next('woke'), bob.next('woke')]);
        for (const w of woke) {
          expect(w.startsWith(`${id} `)).toBe(true);
          expect(JSON.parse(w.slice(id.length + 1)) as Decision).toEqual(stored!.decision);
        }
        if (here) expect(await here).toEqual(stored!.decision);
      }
      console.log(`first-click wins: alice ${wins.alice}, bob ${wins.bob}`);
    } finally {
      broker.close();
      bus.close();
      alice.child.stdin.end();
      bob.child.stdin.end();
      await Promise.all([alice, bob].map((c) => new Promise((r) => (c.child.exitCode !== null ? r(null) : c.child.once('exit', r)))));
    }
  }, 120_000);
});
