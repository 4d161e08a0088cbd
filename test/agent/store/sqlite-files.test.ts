/** The SQLite engine's files: modes, and one exclusive process per store (the lock). */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gatehouse-files-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('a new store: folder 0700, store, WAL, SHM and lock 0600', async () => {
  const path = join(dir, 'data', 'gatehouse.sqlite');
  const store = await openSqliteStore({ path, exclusive: true, log: () => undefined });
  try {
    await store.cache.set('k', 1);
    expect(statSync(join(dir, 'data')).mode & 0o777).toBe(0o700);
    for (const f of ['', '-wal', '-shm', '.lock', '.holder']) expect([f, statSync(path + f).mode & 0o777]).toEqual([f, 0o600]);
  } finally {
    await store.close();
  }
});

test('an existing folder of its own is narrowed to 0700; a shared one is left with a warning', async () => {
  const own = join(dir, 'own');
  mkdirSync(own, { mode: 0o755 });
  chmodSync(own, 0o755);
  await (await openSqliteStore({ path: join(own, 'gatehouse.sqlite'), log: () => undefined })).close();
  expect(statSync(own).mode & 0o777).toBe(0o700);
  const shared = join(dir, 'shared');
  mkdirSync(shared);
  chmodSync(shared, 0o755);
  mkdirSync(join(shared, 'workspace'));
  const logs: string[] = [];
  await (await openSqliteStore({ path: join(shared, 'gatehouse.sqlite'), log: (_level, m) => logs.push(m) })).close();
  expect(statSync(shared).mode & 0o777).toBe(0o755);
  expect(logs.join('\n')).toMatch(new RegExp(`store folder ${shared} is open to other users`));
});

test('one exclusive open per store; others open beside it; the lock is free again after close', async () => {
  const path = join(dir, 'gatehouse.sqlite');
  const first = await openSqliteStore({ path, exclusive: true, log: () => undefined });
  await first.cache.set('mine', 'first');
  const err = await openSqliteStore({ path, exclusive: true, log: () => undefined }).catch((e: unknown) => e);
  expect(err).toMatchObject({ name: 'StoreError', code: 'ALREADY_RUNNING' });
  expect((err as Error).message).toMatch(new RegExp(`already running \\(pid ${process.pid}, since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\)`));
  const beside = await openSqliteStore({ path, mustExist: true, log: () => undefined });
  expect(await beside.cache.get('mine')).toBe('first');
  await beside.close();
  await first.close();
  const again = await openSqliteStore({ path, exclusive: true, log: () => undefined });
  await again.close();
});
