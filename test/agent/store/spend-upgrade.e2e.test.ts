/**
 * Spend totals written before schema 4 (no `resets_at`) get their period's end from the period in
 * their key when the store is upgraded, so the purge finds them too; a conversation's total (no
 * period) is kept. Both engines: a store at schema 3 is built with the engine's own driver and the
 * migrations as released, then opened by Gatehouse.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { MIGRATIONS as PG_MIGRATIONS } from '../../../agent/store/postgres/migrations.js';
import { openPostgresStore } from '../../../agent/store/postgres/index.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../../agent/store/sqlite/schema.js';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';
import type { Store } from '../../../agent/store/types.js';
import { testPostgresUrl } from '../../helpers/postgres.js';

const KEYS = {
  day: 'agent:ops:2026-12-02:usd',
  month: 'agent:ops:2026-12:tokens',
  user: 'user:ops:telegram:42:2026-12-02:usd',
  past: 'agent:ops:2026-11:usd',
  conv: 'conv:ops:cli:2026-12-02:usd',
};
const NOW = Date.UTC(2026, 11, 2, 12);

async function expectPurgedByPeriod(store: Store): Promise<void> {
  const left = async () => [...(await store.spend.totals(Object.values(KEYS))).keys()].sort();
  // The store swept at open on its clock (Dec 2): November's total had ended.
  expect(await left()).toEqual([KEYS.day, KEYS.month, KEYS.conv, KEYS.user].sort());
  expect(await store.spend.purge(Date.UTC(2026, 11, 3))).toBe(2);
  expect(await left()).toEqual([KEYS.month, KEYS.conv].sort());
  expect(await store.spend.purge(Date.UTC(2027, 0, 1))).toBe(1);
  expect(await left()).toEqual([KEYS.conv]);
}

test('sqlite: totals from schema 3 are purged by the period in their key', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gh-spend-upgrade-'));
  try {
    const path = join(dir, 'gatehouse.sqlite');
    const db = new Database(path);
    for (const st of SQLITE_MIGRATIONS.slice(0, 3).flat()) db.exec(st);
    for (const k of Object.values(KEYS)) db.prepare('INSERT INTO spend(key, used, reserved, updated_at) VALUES (?, 1, 0, 0)').run(k);
    db.pragma('user_version = 3');
    db.close();
    const store = await openSqliteStore({ path, log: () => undefined, now: () => NOW });
    try {
      await expectPurgedByPeriod(store);
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('postgres: totals from schema 3 are purged by the period in their key', async () => {
  const url = await testPostgresUrl();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CREATE TABLE gatehouse_schema (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)');
    for (const m of PG_MIGRATIONS.slice(0, 3)) {
      await c.query(m.sql);
      await c.query('INSERT INTO gatehouse_schema VALUES ($1, $2, 0)', [m.version, m.name]);
    }
    for (const k of Object.values(KEYS)) await c.query('INSERT INTO spend (key, used, reserved, updated_at) VALUES ($1, 1, 0, 0)', [k]);
  } finally {
    await c.end();
  }
  const store = await openPostgresStore({ url, log: () => undefined, now: () => NOW });
  try {
    // PostgreSQL sweeps on its timer, not at open: sweep once, as the timer would.
    await store.sweep();
    await expectPurgedByPeriod(store);
  } finally {
    await store.close();
  }
}, 200_000);
