/**
 * Store.leadership on both engines. PostgreSQL: two stores on one database (as two replicas): one
 * leads, the other stands by; release hands over without waiting for the retry tick (NOTIFY); a
 * holder whose connection is cut stops leading at once and the role is taken again by exactly one.
 * SQLite: always leads. ping: answers, and rejects while the database refuses logins.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allowConnections, openPostgresStore, terminateConnections } from '../../../agent/store/postgres/index.js';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';
import type { Leadership, Store } from '../../../agent/store/types.js';
import { testPostgresAdminUrl, testPostgresUrl } from '../../helpers/postgres.js';
import { sleep, waitFor } from '../../helpers/wait.js';

beforeAll(async () => {
  await testPostgresUrl();
}, 200_000);

const stores: Store[] = [];
const roles: Leadership[] = [];
afterEach(async () => {
  for (const r of roles.splice(0)) await r.release();
  for (const s of stores.splice(0)) await s.close();
});

/** Resolves with the next value `l` changes to. */
const nextChange = (l: Leadership): Promise<boolean> =>
  new Promise((resolve) => {
    const off = l.onChange((v) => {
      off();
      resolve(v);
    });
  });

async function twoReplicas(retryEveryMs: number): Promise<{ url: string; a: Leadership; b: Leadership }> {
  const url = await testPostgresUrl();
  const sa = await openPostgresStore({ url, log: () => undefined });
  const sb = await openPostgresStore({ url, log: () => undefined });
  stores.push(sa, sb);
  const a = sa.leadership('platform-connections', { retryEveryMs });
  const b = sb.leadership('platform-connections', { retryEveryMs });
  roles.push(a, b);
  return { url, a, b };
}

test('postgres: one of two leads; release hands over at once (NOTIFY, not the retry tick)', async () => {
  // A retry tick far beyond the test's timeout: only the NOTIFY can hand over in time.
  const { a, b } = await twoReplicas(60_000);
  await a.start();
  await b.start();
  expect(a.leading).toBe(true);
  expect(b.leading).toBe(false);
  const taken = nextChange(b);
  await a.release();
  expect(a.leading).toBe(false);
  expect(await taken).toBe(true);
  expect(b.leading).toBe(true);
}, 20_000);

test('postgres: a holder whose connection is cut stops leading; exactly one leads again', async () => {
  const { url, a, b } = await twoReplicas(200);
  await a.start();
  await b.start();
  expect(a.leading).toBe(true);
  const lost = nextChange(a);
  await terminateConnections(await testPostgresAdminUrl(), new URL(url).pathname.slice(1));
  expect(await lost).toBe(false);
  await waitFor('one of them to lead again', () => a.leading || b.leading, { timeoutMs: 15_000, intervalMs: 50 });
  // Both keep trying (every 200 ms); the lock admits one. A quiet period: the other must not lead too.
  await sleep(600);
  expect([a.leading, b.leading].filter(Boolean)).toHaveLength(1);
}, 20_000);

test('postgres: ping answers, and rejects naming the store while logins are refused', async () => {
  const url = await testPostgresUrl();
  const store = await openPostgresStore({ url, log: () => undefined, retryForMs: 500 });
  stores.push(store);
  await store.ping();
  const admin = await testPostgresAdminUrl();
  const name = new URL(url).pathname.slice(1);
  await allowConnections(admin, name, false);
  try {
    await terminateConnections(admin, name);
    await expect(store.ping()).rejects.toThrow(/PostgreSQL .*ping failed/);
  } finally {
    await allowConnections(admin, name, true);
  }
  await store.ping();
}, 20_000);

test('sqlite: always leads, and pings', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gh-lead-'));
  const store = await openSqliteStore({ path: join(dir, 's.sqlite'), log: () => undefined });
  stores.push(store);
  const l = store.leadership('platform-connections');
  await l.start();
  expect(l.leading).toBe(true);
  await store.ping();
  await l.release();
});
