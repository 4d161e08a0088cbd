/**
 * bot/storage.ts on a real SQLite file: what the runner and the router rely on from the store.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Keyv from 'keyv';
import Database from 'better-sqlite3';
import { startSqliteWorker } from '../../bot/sqlite-worker.js';
import { openStorage, type Storage } from '../../bot/storage.js';

let dir: string;
let storage: Storage;
let logged: string[];
const open = () => openStorage({ kind: 'sqlite', path: join(dir, 'store.sqlite'), url: `sqlite://${join(dir, 'store.sqlite')}` }, (m) => logged.push(m));

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-store-'));
  logged = [];
  storage = await open();
});
afterEach(async () => {
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

async function list(kv: Storage['runs']): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for await (const [k, v] of kv.iterator!()) out.set(k, v);
  return out;
}

test('a namespace lists every live entry, across pages, and nothing of other namespaces', async () => {
  for (let i = 0; i < 1200; i++) await storage.runs.set(`q:telegram:${i}`, [{ id: String(i) }]);
  await storage.transcripts.set('c:telegram:1', { agent: 'default' });
  await storage.runs.set('gone', 1, 1); // expires in 1 ms
  await new Promise((r) => setTimeout(r, 10));
  const listed = await list(storage.runs);
  expect(listed.size).toBe(1200);
  expect(listed.get('q:telegram:1199')).toEqual([{ id: '1199' }]);
  expect([...listed.keys()].every((k) => k.startsWith('q:telegram:'))).toBe(true);
});

test('delete removes the entry (and says whether there was one); values survive a reopen', async () => {
  await storage.runs.set('q:a', [1]);
  await storage.runs.set('q:b', [2]);
  expect(await storage.runs.delete('q:a')).toBe(true);
  expect(await storage.runs.delete('q:a')).toBe(false);
  expect(await storage.runs.get('q:a')).toBeUndefined();
  await storage.close();
  storage = await open();
  expect(await storage.runs.get('q:b')).toEqual([2]);
  expect([...(await list(storage.runs)).keys()]).toEqual(['q:b']);
});

test('a store that cannot be opened fails at start with the reason', async () => {
  const path = join(dir, 'a-directory');
  mkdirSync(path);
  await expect(openStorage({ kind: 'sqlite', path, url: `sqlite://${path}` })).rejects.toThrow(/cannot open the store \(sqlite:\/\/.*a-directory\)/);
});

test('after close, reads and writes fail loudly instead of quietly doing nothing', async () => {
  await storage.runs.set('q:a', [1]);
  await storage.close();
  await expect(storage.runs.set('q:b', [2])).rejects.toThrow(/closed/);
  await expect(storage.transcripts.get('c:x')).rejects.toThrow(/closed/);
  expect(logged).toContain('[store] runs: the store is closed');
  storage = await open();
  expect(await storage.runs.get('q:b')).toBeUndefined();
  expect(await storage.runs.get('q:a')).toEqual([1]);
});

describe('WAL checkpoints (bot/sqlite-worker.ts)', () => {
  const walSize = (path: string) => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);

  test('run on their own while writes go on, so the WAL stays small; close leaves it empty', async () => {
    const path = join(dir, 'wal.sqlite');
    const worker = await startSqliteWorker(path, ['transcripts'], { checkpointMs: 20, restartFrames: 200 });
    const kv = new Keyv({ store: worker.store('transcripts'), namespace: 'transcripts', throwOnErrors: true });
    const value = 'x'.repeat(4096);
    for (let i = 0; i < 3000; i++) {
      await kv.set(`c:${i % 300}`, `${i}:${value}`);
      // Writes in bursts, as a bot's are: the checkpoint timer must get its turn between them even on a
      // loaded machine, where a tight loop could starve it and the test would measure the scheduler.
      if (i % 100 === 99) await new Promise((r) => setTimeout(r, 60));
    }
    // 3000 writes of 4 KB would leave a WAL of 12 MB or more without checkpoints.
    expect(walSize(path)).toBeLessThan(4 * 1024 * 1024);
    await worker.close();
    expect(walSize(path)).toBe(0);
    const again = await startSqliteWorker(path, ['transcripts']);
    const kv2 = new Keyv({ store: again.store('transcripts'), namespace: 'transcripts' });
    expect(String(await kv2.get('c:299')).startsWith('2999:')).toBe(true);
    await again.close();
  });
});

test('expired entries are deleted from the file, not only hidden by keyv', async () => {
  const path = join(dir, 'sweep.sqlite');
  const worker = await startSqliteWorker(path, ['dedupe'], { sweepMs: 50 });
  const kv = new Keyv({ store: worker.store('dedupe'), namespace: 'dedupe', throwOnErrors: true, serialize: JSON.stringify, deserialize: JSON.parse });
  for (let i = 0; i < 1200; i++) await kv.set(`m:${i}`, 1, 1); // expire after 1 ms
  await kv.set('kept', 1, 60_000);
  await kv.set('forever', 1);
  await new Promise((r) => setTimeout(r, 400));
  const db = new Database(path, { readonly: true });
  const keys = db.prepare('SELECT key FROM keyv ORDER BY key').pluck().all();
  db.close();
  expect(keys).toEqual(['dedupe:forever', 'dedupe:kept']);
  await worker.close();
});

describe('claimEvent (platform event ids)', () => {
  test('first claim wins, a repeat loses, an expired one can be claimed again; keyv reads it back', async () => {
    expect(await storage.claimEvent('m:telegram:1', 60_000)).toBe(true);
    expect(await storage.claimEvent('m:telegram:1', 60_000)).toBe(false);
    expect(await storage.dedupe.get('m:telegram:1')).toBe(1); // keyv's own format
    expect(await storage.claimEvent('m:telegram:2', 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 10));
    expect(await storage.claimEvent('m:telegram:2', 60_000)).toBe(true);
  });

  test('concurrent claims of one id, from two instances on the same file: exactly one wins', async () => {
    const other = await open();
    try {
      const ids = Array.from({ length: 50 }, (_, i) => `m:slack:${i}`);
      const results = await Promise.all(ids.flatMap((id) => [storage.claimEvent(id, 60_000), other.claimEvent(id, 60_000)]));
      for (let i = 0; i < ids.length; i++) expect([results[2 * i], results[2 * i + 1]].filter(Boolean)).toHaveLength(1);
    } finally {
      await other.close();
    }
  });
});

describe('decideOnce (first decision of an approval)', () => {
  test('writes only over a stored, live, undecided request; keyv reads the result back', async () => {
    expect(await storage.decideOnce('r:none', { id: 'none', decision: { outcome: 'approved' } }, 60_000)).toBe(false);
    expect(await storage.approvals.get('r:none')).toBeUndefined();
    await storage.approvals.set('r:a', { id: 'a' }, 60_000);
    expect(await storage.decideOnce('r:a', { id: 'a', decision: { outcome: 'denied', by: 'u1' } }, 60_000)).toBe(true);
    expect(await storage.decideOnce('r:a', { id: 'a', decision: { outcome: 'approved', by: 'u2' } }, 60_000)).toBe(false);
    expect(await storage.approvals.get('r:a')).toEqual({ id: 'a', decision: { outcome: 'denied', by: 'u1' } });
    await storage.approvals.set('r:old', { id: 'old' }, 1);
    await new Promise((r) => setTimeout(r, 10));
    expect(await storage.decideOnce('r:old', { id: 'old', decision: { outcome: 'approved' } }, 60_000)).toBe(false);
  });
});
