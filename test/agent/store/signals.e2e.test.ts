/**
 * The Signals contract (agent/store/types.ts) on both engines: delivery to this process's
 * subscribers, topics apart, unsubscribe, limits. On PostgreSQL also across real processes (a
 * replica child publishes, this process hears it; and the other way), and a lost listening
 * connection (pg_terminate_backend from a second connection; the whole server stopped, then started
 * again): it is reconnected, resync is called, and signals flow again; its log lines never hold the
 * password.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';
import { createDatabase, openPostgresStore, terminateConnections } from '../../../agent/store/postgres/index.js';
import { MAX_SIGNAL_PAYLOAD, type Store } from '../../../agent/store/types.js';
import { startPrivatePostgres, testPostgresAdminUrl, testPostgresUrl } from '../../helpers/postgres.js';
import { startReplica } from '../../helpers/replica-process.js';

const next = <T>(subscribe: (fn: (v: T) => void) => () => void): Promise<T> =>
  new Promise((resolve) => {
    const off = subscribe((v) => {
      off();
      resolve(v);
    });
  });

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-signals-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const engines: Array<[string, () => Promise<Store>]> = [
  ['sqlite', () => openSqliteStore({ path: join(dir, `s-${Math.random().toString(36).slice(2)}.sqlite`), log: () => undefined })],
  ['postgres', async () => openPostgresStore({ url: await testPostgresUrl(), log: () => undefined })],
];

describe.each(engines)('signals on %s', (_name, open) => {
  let store: Store;
  beforeAll(async () => {
    if (_name === 'postgres') await testPostgresUrl();
  }, 200_000);
  beforeEach(async () => {
    store = await open();
    await store.signals.ready();
  });
  afterEach(async () => {
    await store.close();
  });

  test('a publish reaches every subscriber of its topic here, with its payload; others and the unsubscribed hear nothing', async () => {
    const a: string[] = [];
    const b: string[] = [];
    const other: string[] = [];
    const offA = store.signals.subscribe('decision', (p) => a.push(p));
    store.signals.subscribe('decision', (p) => b.push(p));
    store.signals.subscribe('allowlist', (p) => other.push(p));
    // A subscriber that throws keeps nobody else from hearing it.
    store.signals.subscribe('decision', () => {
      throw new Error('mine');
    });
    const heard = next<string>((fn) => store.signals.subscribe('decision', fn));
    await store.signals.publish('decision', 'req-1 ünïcode');
    expect(await heard).toBe('req-1 ünïcode');
    offA();
    const again = next<string>((fn) => store.signals.subscribe('decision', fn));
    await store.signals.publish('decision', 'req-2');
    expect(await again).toBe('req-2');
    // The marker subscription after req-2 proves every earlier one was delivered (one connection, in order).
    const marker = next<string>((fn) => store.signals.subscribe('allowlist', fn));
    await store.signals.publish('allowlist', 'done');
    await marker;
    expect(a).toEqual(['req-1 ünïcode']);
    expect(b).toEqual(['req-1 ünïcode', 'req-2']);
    expect(other).toEqual(['done']);
  });

  test('a topic outside the pattern or a payload over the limit is refused, naming the limit', async () => {
    await expect(store.signals.publish('Bad Topic', 'x')).rejects.toThrow(/topic must match/);
    await expect(store.signals.publish('decision', 'x'.repeat(MAX_SIGNAL_PAYLOAD + 1))).rejects.toThrow(/at most 1000 bytes.*keep the data in the store/);
    await store.signals.publish('decision', 'x'.repeat(MAX_SIGNAL_PAYLOAD));
  });
});

describe('signals on postgres across processes and a lost connection', () => {
  beforeAll(async () => {
    await testPostgresUrl();
  }, 200_000);

  test('another process hears this one, and this one hears it', async () => {
    const url = await testPostgresUrl();
    const store = await openPostgresStore({ url, log: () => undefined });
    const replica = startReplica(url);
    try {
      await store.signals.ready();
      expect(await replica.next('ready')).toBe('');
      replica.send('sub decision');
      await replica.next('subscribed');
      await store.signals.publish('decision', 'from-test');
      expect(await replica.next('sig')).toBe('decision from-test');
      const heard = next<string>((fn) => store.signals.subscribe('allowlist', fn));
      replica.send('pub allowlist from-child');
      expect(await heard).toBe('from-child');
    } finally {
      await replica.stop();
      await store.close();
    }
  }, 60_000);

  test('the listening connection is terminated: it reconnects, LISTENs again, calls resync, and signals flow; no password logged', async () => {
    const url = await testPostgresUrl();
    const logs: string[] = [];
    const store = await openPostgresStore({ url, log: (_level, m) => logs.push(m) });
    const publisher = await openPostgresStore({ url, log: () => undefined });
    try {
      let resyncs = 0;
      const firstResync = new Promise<void>((r) => store.signals.onResync(() => (++resyncs === 1 ? r() : undefined)));
      await store.signals.ready();
      await firstResync;
      const resynced = new Promise<void>((r) => store.signals.onResync(() => r()));
      // Every connection of the database, the listening one included (the pool reconnects its own).
      const adminUrl = await testPostgresAdminUrl();
      const database = decodeURIComponent(new URL(url).pathname.slice(1));
      expect(await terminateConnections(adminUrl, database)).toBeGreaterThan(0);
      await resynced;
      expect(resyncs).toBe(2);
      const heard = next<string>((fn) => store.signals.subscribe('decision', fn));
      await publisher.signals.publish('decision', 'after');
      expect(await heard).toBe('after');
      expect(logs.some((l) => /signals: the listening connection .* was lost/.test(l))).toBe(true);
      expect(logs.some((l) => /signals: listening on .* again after \d+ ms/.test(l))).toBe(true);
      const password = decodeURIComponent(new URL(url).password);
      expect(password).not.toBe('');
      for (const l of logs) expect(l).not.toContain(password);
    } finally {
      await publisher.close();
      await store.close();
    }
  }, 60_000);

  test('the server stops and starts again: attempts fail meanwhile, then it listens again, resyncs, and signals flow', async () => {
    const server = await startPrivatePostgres();
    try {
      const url = await createDatabase(server.url, 'gh_signals_restart');
      const logs: string[] = [];
      let failed: () => void = () => undefined;
      const failing = new Promise<void>((r) => (failed = r));
      const store = await openPostgresStore({
        url,
        log: (_level, m) => {
          logs.push(m);
          if (/signals: cannot listen/.test(m)) failed();
        },
      });
      try {
        await store.signals.ready();
        const resynced = new Promise<void>((r) => {
          let n = 0;
          // Subscribed after the first LISTEN's resync: the next one follows the restart.
          store.signals.onResync(() => void (++n === 1 && r()));
        });
        await server.stop();
        // A reconnect attempt failed while it was down (logged on the first and every tenth).
        await failing;
        await server.start();
        await resynced;
        const heard = next<string>((fn) => store.signals.subscribe('decision', fn));
        await store.signals.publish('decision', 'back');
        expect(await heard).toBe('back');
        const password = decodeURIComponent(new URL(url).password);
        expect(password).not.toBe('');
        for (const l of logs) expect(l).not.toContain(password);
      } finally {
        await store.close();
      }
    } finally {
      await server.stop();
    }
  }, 180_000);
});
