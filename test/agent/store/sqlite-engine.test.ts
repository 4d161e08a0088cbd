/**
 * The SQLite engine on real files, beyond the contract suite (what the keyv store's
 * test/bot/storage.test.ts held, through `openStore` / `openSqliteStore` and the repositories): a store
 * that cannot be opened fails naming the path and the reason; after close every call rejects; WAL
 * checkpoints keep the WAL small and close leaves it empty; the sweep deletes expired event ids and
 * approvals from the file; two instances on one file race `events.claim` with one winner.
 * (A read-only folder or store file, and the modes, are covered on real starts by
 * test/bot/store-commands.e2e.test.ts and test/bot/store-permissions.e2e.test.ts.)
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';
import type { Store } from '../../../agent/store/types.js';
import { openStore } from '../../../bot/service/storage.js';

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gatehouse-engine-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const quiet = () => undefined;
const size = (file: string) => (existsSync(file) ? statSync(file).size : 0);
const T = 1_800_000_000_000;

test('a folder where the store file should be: start fails naming the path and the reason, and the folder is left as it was', async () => {
  const path = join(dir, 'gatehouse.sqlite');
  mkdirSync(path, { mode: 0o755 });
  const err = await openStore({ kind: 'sqlite', path, url: `sqlite://${path}` }, { exclusive: true, log: quiet }).catch((e: unknown) => e);
  expect(err).toMatchObject({ name: 'StoreError', code: 'BAD_PATH' });
  expect((err as Error).message).toBe(
    `cannot open the store (sqlite://${path}): the store path ${path} is a folder, not a file: point GATEHOUSE_STORE at a file (e.g. sqlite://${path}/gatehouse.sqlite) or move the folder away`,
  );
  expect((err as Error).message).not.toMatch(/permission/);
  expect(statSync(path).mode & 0o777).toBe(0o755);
  // Nothing of a second start was left behind: the lock is free for a start on a good path.
  expect(existsSync(`${path}.holder`)).toBe(false);
});

test('after close every call rejects naming the closed store; what was written before is kept, nothing after', async () => {
  const path = join(dir, 'gatehouse.sqlite');
  const store = await openSqliteStore({ path, log: quiet });
  await store.cache.set('before', 1);
  await store.close();
  await store.close(); // twice is fine
  const w = { conversation: 'c', agent: 'a', state: {}, changes: [{ op: 'append' as const, rows: [{ seq: 1, message: 'm' }] }], now: T };
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['transcripts.load', () => store.transcripts.load('c')],
    ['transcripts.revision', () => store.transcripts.revision('c')],
    ['transcripts.write', () => store.transcripts.write(w)],
    ['transcripts.delete', () => store.transcripts.delete('c')],
    ['transcripts.listRecent', () => store.transcripts.listRecent({ limit: 10 })],
    ['transcripts.applyRetention', () => store.transcripts.applyRetention({ agent: 'a', keep: 1, idleBefore: 0 })],
    ['transcripts.putToolResult', () => store.transcripts.putToolResult('c', 'r', 'x')],
    ['transcripts.getToolResult', () => store.transcripts.getToolResult('c', 'r')],
    ['runs.enqueueTurn', () => store.runs.enqueueTurn('c', 't', {}, T)],
    ['runs.dropTurn', () => store.runs.dropTurn('c', 't')],
    ['runs.queuedTurns', () => store.runs.queuedTurns()],
    ['runs.saveRecord', () => store.runs.saveRecord('c', {})],
    ['runs.dropRecord', () => store.runs.dropRecord('c')],
    ['runs.records', () => store.runs.records()],
    ['approvals.create', () => store.approvals.create({ id: 'r', conversation: 'c', request: {}, tokens: [], createdAt: T, keepUntil: T + 1 })],
    ['approvals.get', () => store.approvals.get('r', T)],
    ['approvals.byToken', () => store.approvals.byToken('tok', T)],
    ['approvals.pending', () => store.approvals.pending('c', T)],
    ['approvals.allPending', () => store.approvals.allPending(T)],
    ['approvals.update', () => store.approvals.update('r', {}, T)],
    ['approvals.decideOnce', () => store.approvals.decideOnce('r', {}, T, T)],
    ['allowlists.list', () => store.allowlists.list('a')],
    ['allowlists.add', () => store.allowlists.add('a', 'tool', 'x', T)],
    ['allowlists.remove', () => store.allowlists.remove('a', 'tool', 'x')],
    ['events.claim', () => store.events.claim('e', 1000, T)],
    ['memory.list', () => store.memory.list('l')],
    ['memory.put', () => store.memory.put('l', 'i', {})],
    ['memory.remove', () => store.memory.remove('l', 'i')],
    ['reminders.put', () => store.reminders.put({ id: 'r', conversation: 'c', dueAt: T, rev: 1, reminder: {} })],
    ['reminders.get', () => store.reminders.get('r')],
    ['reminders.delete', () => store.reminders.delete('r')],
    ['reminders.byConversation', () => store.reminders.byConversation('c')],
    ['reminders.all', () => store.reminders.all()],
    ['reminders.due', () => store.reminders.due(T, 10)],
    ['reminders.swap', () => store.reminders.swap('r', 1, { id: 'r', conversation: 'c', dueAt: T, rev: 2, reminder: {} })],
    ['cache.get', () => store.cache.get('before')],
    ['cache.set', () => store.cache.set('after', 2)],
    ['cache.delete', () => store.cache.delete('before')],
    ['checkpoint', () => store.checkpoint({ transcript: w, record: { conversation: 'c', record: {} } })],
  ];
  for (const [name, call] of calls) {
    const outcome = await call().then(
      () => 'resolved',
      (e: unknown) => (e as Error).message,
    );
    expect([name, outcome]).toEqual([name, 'the store is closed']);
  }
  const again = await openSqliteStore({ path, log: quiet });
  try {
    expect(await again.cache.get('before')).toBe(1);
    expect(await again.cache.get('after')).toBeUndefined();
    expect(await again.transcripts.load('c')).toBeUndefined();
  } finally {
    await again.close();
  }
});

test('WAL checkpoints run on their own while writes go on, so the WAL stays small; close leaves it empty', async () => {
  const path = join(dir, 'wal.sqlite');
  const store = await openSqliteStore({ path, log: quiet, checkpointMs: 20 });
  const value = 'x'.repeat(4096);
  let largest = 0;
  for (let i = 0; i < 3000; i++) {
    await store.cache.set(`c:${i % 300}`, `${i}:${value}`);
    // Writes in bursts, as a bot's are: the worker's checkpoint timer gets its turn between them
    // even on a loaded machine (the assertion is on the file's size, never on time).
    if (i % 100 === 99) {
      largest = Math.max(largest, size(`${path}-wal`));
      await new Promise((r) => setTimeout(r, 60));
    }
  }
  largest = Math.max(largest, size(`${path}-wal`));
  // 3000 writes of 4 KB would leave a WAL of 12 MB or more without checkpoints.
  expect(largest).toBeGreaterThan(0);
  expect(largest).toBeLessThan(4 * 1024 * 1024);
  await store.close();
  expect(size(`${path}-wal`)).toBe(0);
  const again = await openSqliteStore({ path, log: quiet });
  try {
    expect(String(await again.cache.get('c:299')).startsWith('2999:')).toBe(true);
  } finally {
    await again.close();
  }
});

describe('the sweep deletes expired rows from the file', () => {
  const approval = (id: string, keepUntil: number, request: unknown = { id }) => ({
    id,
    conversation: 'telegram:1',
    request,
    tokens: [{ token: `tok-${id}`, choice: 'approve' }],
    createdAt: T,
    keepUntil,
  });

  test('at open: event ids past their ttl and approvals past keepUntil (with their tokens) are gone; live ones stay; the space is reused', async () => {
    const path = join(dir, 'sweep.sqlite');
    const big = 'r'.repeat(2048);
    let store = await openSqliteStore({ path, log: quiet, now: () => T });
    // More than one sweep batch (500) of each.
    for (let i = 0; i < 1200; i++) await store.events.claim(`m:${i}`, 5, T);
    await store.events.claim('kept', 60_000, T);
    for (let i = 0; i < 1200; i++) await store.approvals.create(approval(`old-${i}`, T + 5, { big }));
    await store.approvals.create(approval('live', T + 60_000));
    await store.close();
    const full = size(path);

    store = await openSqliteStore({ path, log: quiet, now: () => T + 10 });
    try {
      // Asked with the old `now`, a row still in the file would be found (live then): these are deleted.
      for (const i of [0, 499, 500, 1199]) {
        expect(await store.approvals.get(`old-${i}`, T)).toBeUndefined();
        expect(await store.approvals.byToken(`tok-old-${i}`, T)).toBeUndefined();
        expect(await store.events.claim(`m:${i}`, 60_000, T)).toBe(true); // claimable again: the old row is gone
      }
      expect(await store.approvals.allPending(T)).toEqual([{ id: 'live', conversation: 'telegram:1' }]);
      expect(await store.approvals.byToken('tok-live', T + 10)).toEqual({ requestId: 'live', choice: 'approve' });
      expect(await store.events.claim('kept', 60_000, T + 10)).toBe(false);
      // As much again goes into the pages the sweep freed: the file hardly grows (kept, it would double).
      for (let i = 0; i < 1200; i++) await store.approvals.create(approval(`new-${i}`, T + 60_000, { big }));
    } finally {
      await store.close();
    }
    expect(size(path)).toBeLessThan(full * 1.25);
  });

  test('every sweepMs while the store is open', async () => {
    const path = join(dir, 'periodic.sqlite');
    let clock = T;
    let ticks = 0;
    let wake: (() => void) | undefined;
    // After open, only the sweep timer reads the clock: each read is a sweep starting.
    const now = () => {
      ticks++;
      wake?.();
      return clock;
    };
    const store = await openSqliteStore({ path, log: quiet, now, sweepMs: 20 });
    try {
      await store.events.claim('gone', 5, T);
      await store.events.claim('kept', 60_000, T);
      await store.approvals.create(approval('old', T + 5));
      await store.approvals.create(approval('live', T + 60_000));
      clock = T + 10;
      // Two sweeps started after the clock moved: the worker runs batches in order, so the first
      // one's deletes are done before the next call below.
      const target = ticks + 2;
      await new Promise<void>((resolve) => {
        wake = () => {
          if (ticks >= target) resolve();
        };
      });
      wake = undefined;
      expect(await store.approvals.get('old', T)).toBeUndefined();
      expect(await store.approvals.get('live', T)).toMatchObject({ id: 'live' });
      expect(await store.events.claim('gone', 60_000, T)).toBe(true);
      expect(await store.events.claim('kept', 60_000, T + 10)).toBe(false);
    } finally {
      await store.close();
    }
  });
});

test('two store instances on one file racing events.claim and approvals.decideOnce: exactly one wins each', async () => {
  const path = join(dir, 'shared.sqlite');
  const stores: Store[] = [await openSqliteStore({ path, log: quiet }), await openSqliteStore({ path, log: quiet })];
  try {
    const ids = Array.from({ length: 50 }, (_, i) => `m:slack:${i}`);
    for (const id of ids) await stores[0]!.approvals.create({ id, conversation: 'slack:C1', request: { id }, tokens: [], createdAt: T, keepUntil: T + 60_000 });
    const claims = await Promise.all(ids.flatMap((id) => stores.map((s) => s.events.claim(id, 60_000, T))));
    const decisions = await Promise.all(ids.flatMap((id) => stores.map((s, n) => s.approvals.decideOnce(id, { by: n }, T, T + 60_000))));
    for (let i = 0; i < ids.length; i++) {
      expect([ids[i], [claims[2 * i], claims[2 * i + 1]].filter(Boolean).length]).toEqual([ids[i], 1]);
      expect([ids[i], [decisions[2 * i], decisions[2 * i + 1]].filter(Boolean).length]).toEqual([ids[i], 1]);
      // The winner's decision is the one stored, read from either instance.
      const winner = decisions[2 * i] ? 0 : 1;
      expect((await stores[1 - winner]!.approvals.get(ids[i]!, T))?.decision).toEqual({ by: winner });
    }
  } finally {
    for (const s of stores) await s.close();
  }
});
