/**
 * Contract: server administration the tests (and setup tooling) need, kept here so `pg` stays in
 * this folder: create / drop a database, end a database's connections (a lost connection on
 * purpose), wait until a server answers. `adminUrl` is a login that may CREATE DATABASE; errors
 * are scrubbed of its password.
 */
import pg from 'pg';
import { StoreError } from '../types.js';
import { parseTarget, redact, startupError } from './errors.js';
import { messageOf } from '../../log.js';

async function withAdmin<T>(adminUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const t = parseTarget(adminUrl);
  const c = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
  } catch (err) {
    throw startupError(err, t);
  }
  try {
    return await fn(c);
  } catch (err) {
    throw new StoreError(redact(messageOf(err), t.password), (err as { code?: string }).code);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** The URL of `name` on the same server and login as `adminUrl`. */
function databaseUrl(adminUrl: string, name: string): string {
  const t = parseTarget(adminUrl);
  if (t.socket) {
    const auth = encodeURIComponent(t.user) + (t.password ? `:${encodeURIComponent(t.password)}` : '');
    return `postgres://${auth}@/${encodeURIComponent(name)}?host=${encodeURIComponent(t.host)}&port=${t.port}`;
  }
  const u = new URL(adminUrl);
  u.pathname = '/' + encodeURIComponent(name);
  return u.toString();
}

/** Creates an empty database (from template1) and returns its URL. */
export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  await withAdmin(adminUrl, (c) => c.query(`CREATE DATABASE ${c.escapeIdentifier(name)}`));
  return databaseUrl(adminUrl, name);
}

/** Ends every other connection to `database` (pg_terminate_backend); returns how many. */
export async function terminateConnections(adminUrl: string, database: string): Promise<number> {
  return withAdmin(adminUrl, async (c) => {
    const r = await c.query(
      'SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [database],
    );
    return Number((r.rows[0] as { n: string }).n);
  });
}

/** Lets logins into `database` in or keeps them out (ALTER DATABASE ... ALLOW_CONNECTIONS): an outage, for tests. */
export async function allowConnections(adminUrl: string, database: string, allow: boolean): Promise<void> {
  await withAdmin(adminUrl, (c) => c.query(`ALTER DATABASE ${c.escapeIdentifier(database)} WITH ALLOW_CONNECTIONS ${allow ? 'true' : 'false'}`));
}

/** Resolves once the server accepts a login; rejects with the last reason after `timeoutMs`. */
export async function waitForServer(adminUrl: string, timeoutMs: number, isAlive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await withAdmin(adminUrl, (c) => c.query('SELECT 1'));
      return;
    } catch (err) {
      if (Date.now() > deadline || !isAlive()) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The server's current WAL position (for measuring what a store writes). */
export async function currentWalLsn(url: string): Promise<string> {
  return withAdmin(url, async (c) => String((await c.query('SELECT pg_current_wal_flush_lsn() AS l')).rows[0]?.l));
}

/**
 * WAL bytes written since `lsn` by records that touch this URL's database only (other databases
 * on a shared test server do not count). Needs pg_walinspect (contrib, PostgreSQL 16+) and a
 * superuser or pg_read_server_files login.
 */
export async function databaseWalBytesSince(url: string, lsn: string): Promise<number> {
  return withAdmin(url, async (c) => {
    await c.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const r = await c.query(
      `SELECT coalesce(sum(record_length), 0) AS n FROM (
         SELECT DISTINCT start_lsn, record_length FROM pg_get_wal_block_info($1::pg_lsn, pg_current_wal_flush_lsn(), false)
          WHERE reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())) r`,
      [lsn],
    );
    return Number((r.rows[0] as { n: string }).n);
  });
}
