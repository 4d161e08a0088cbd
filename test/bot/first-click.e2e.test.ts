/**
 * First click wins across processes sharing one SQLite store: two real node processes
 * (test/helpers/approval-clicker.ts: the real broker on bot/storage.ts) click the same approval
 * button at the same moment, 60 rounds. Each round exactly one click is accepted, the other is told
 * it was already decided, and the stored decision is the winner's.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ApprovalBroker, type ClickResult } from '../../agent/approvals.js';
import { kvApprovalRepo } from '../../bot/kv-approvals.js';
import type { Card } from '../../agent/events.js';
import { openStorage, type Storage } from '../../bot/storage.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const clicker = join(root, 'test', 'helpers', 'approval-clicker.ts');
const ROUNDS = 60;

interface Clicker {
  child: ChildProcessWithoutNullStreams;
  next(): Promise<string>;
}

function startClicker(path: string): Clicker {
  const child = spawn(process.execPath, ['--import', register, clicker, path], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiting: Array<(l: string) => void> = [];
  createInterface({ input: child.stdout }).on('line', (l) => {
    const w = waiting.shift();
    if (w) w(l);
    else lines.push(l);
  });
  child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
  return { child, next: () => (lines.length ? Promise.resolve(lines.shift()!) : new Promise((r) => waiting.push(r))) };
}

let dir: string;
let storage: Storage;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-first-click-'));
  storage = await openStorage({ kind: 'sqlite', path: join(dir, 'store.sqlite'), url: `sqlite://${join(dir, 'store.sqlite')}` });
});
afterEach(async () => {
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

test('two processes click the same button at once, 60 rounds: exactly one wins each time', async () => {
  const cards: Card[] = [];
  const broker = new ApprovalBroker({
    approvals: kvApprovalRepo(storage),
    outputs: () => ({ emit: async () => undefined, streamsText: false, postCard: async (c) => String(cards.push(c)), updateCard: async () => undefined }),
    approversOf: () => ['alice', 'bob'],
  });
  const ids: string[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    ids.push(
      await broker.askApproval({
        conversationKey: `telegram:${i}`, platform: 'telegram', agentName: 'default', runId: `run-${i}`,
        title: 'Run a command?', body: 'ls', alwaysLabel: null, timeoutMs: 600_000,
      }),
    );
  }
  const path = join(dir, 'store.sqlite');
  const alice = startClicker(path);
  const bob = startClicker(path);
  try {
    expect(await alice.next()).toBe('ready');
    expect(await bob.next()).toBe('ready');
    const wins = { alice: 0, bob: 0 };
    for (let i = 0; i < ROUNDS; i++) {
      // The same button for both; alternate Approve / Deny so the stored outcome shows who won.
      const token = cards[i]!.buttons[i % 2]!.token;
      const at = Date.now() + 30;
      alice.child.stdin.write(`${at} alice ${token} telegram:${i}\n`);
      bob.child.stdin.write(`${at} bob ${token} telegram:${i}\n`);
      const a = JSON.parse(await alice.next()) as ClickResult;
      const b = JSON.parse(await bob.next()) as ClickResult;
      expect([a.accepted, b.accepted].filter(Boolean)).toHaveLength(1);
      const loser = a.accepted ? b : a;
      expect(loser.notice).toMatch(/^Already decided/);
      const winner = a.accepted ? 'alice' : 'bob';
      wins[winner]++;
      const stored = await broker.get(ids[i]!);
      expect(stored?.decision).toMatchObject({ by: winner, outcome: i % 2 === 0 ? 'approved' : 'denied' });
      expect(await broker.pendingIds(`telegram:${i}`)).toEqual([]);
    }
    console.log(`first-click wins: alice ${wins.alice}, bob ${wins.bob}`);
  } finally {
    alice.child.stdin.end();
    bob.child.stdin.end();
    await Promise.all([alice, bob].map((c) => new Promise((r) => (c.child.exitCode !== null ? r(null) : c.child.once('exit', r)))));
  }
}, 120_000);
