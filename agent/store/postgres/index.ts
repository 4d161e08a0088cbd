/**
 * Contract: `openPostgresStore` opens the PostgreSQL engine of the Store (../types.ts).
 * - Start: one connection checks the server (reachable, login, database, version >= 13) and the
 *   schema is migrated under an advisory lock; any failure is a StoreError naming host, port,
 *   database and the fix, never the password. Nothing is retried at start (the supervisor restarts).
 * - Running: a pg Pool (`poolSize`, default 10). Lost connections are retried per db.ts.
 * - Every `sweepEveryMs` (default 10 min, unref'd) expired event claims and approvals past their
 *   keepUntil are deleted.
 * - `checkpoint` is one transaction: the transcript write (5 round trips for an append) + 1 per
 *   queued-turn drop / record change; rerun when the connection went before COMMIT.
 * `pg` is imported only in this folder.
 */
import pg from 'pg';
import type { Checkpoint, Store } from '../types.js';
import { Db } from './db.js';
import { checkServerVersion, describeTarget, parseTarget, redact, startupError } from './errors.js';
import { migrate } from './migrations.js';
import { allowlistRepo, approvalRepo, cacheRepo, eventLedger, memoryRepo, reminderRepo, runRepo } from './repos.js';
import { applyWrite, transcriptRepo } from './transcripts.js';
import { enc } from './db.js';

export { createDatabase, currentWalLsn, databaseUrl, databaseWalBytesSince, dropDatabase, terminateConnections, waitForServer } from './admin.js';

export interface PostgresStoreOptions {
  url: string;
  log?: (msg: string) => void;
  now?: () => number;
  poolSize?: number;
  /** How long a call keeps retrying a lost connection before it rejects (default 30 s). */
  retryForMs?: number;
  /** How often expired rows are swept (default 10 minutes). */
  sweepEveryMs?: number;
  /** How long the first connection may take (default 10 s). */
  connectTimeoutMs?: number;
}

export interface PostgresStore extends Store {
  /** Statements sent so far (BEGIN and COMMIT count): round trips per operation, for the bench. */
  roundTrips(): number;
  /** Deletes expired rows now (the timer calls it); returns how many went. */
  sweep(): Promise<number>;
}

export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const target = parseTarget(opts.url);
  const log = (msg: string) => opts.log?.(redact(msg, target.password));
  const now = opts.now ?? Date.now;
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.poolSize ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 10_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: 'gatehouse',
  });
  // An idle connection dropped by the server must not crash the process; the pool replaces it.
  pool.on('error', (err) => log(`postgres: an idle connection failed: ${err.message}`));
  const db = new Db(pool, target, log, opts.retryForMs ?? 30_000);

  try {
    const c = await pool.connect().catch((err: unknown) => {
      throw startupError(err, target);
    });
    try {
      const r = await c.query("SELECT current_setting('server_version_num')::int AS num, current_setting('server_version') AS text");
      const row = r.rows[0] as { num: number; text: string };
      const tooOld = checkServerVersion(row.num, row.text, target);
      if (tooOld) throw tooOld;
    } finally {
      c.release();
    }
    const m = await migrate(db, now(), log).catch((err: unknown) => {
      throw startupError(err, target);
    });
    log(`postgres: store ${describeTarget(target)} at schema version ${m.version}${m.applied.length ? ` (applied ${m.applied.join(', ')})` : ''}`);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw startupError(err, target);
  }

  const sweep = async (): Promise<number> => {
    const t = now();
    const r = await db.query(
      'sweep expired rows',
      'idempotent',
      `WITH e AS (DELETE FROM events WHERE expires_at <= $1 RETURNING 1),
            a AS (DELETE FROM approvals WHERE keep_until < $1 RETURNING 1)
       SELECT (SELECT count(*) FROM e) + (SELECT count(*) FROM a) AS n`,
      [t],
    );
    return Number((r.rows[0] as { n: string } | undefined)?.n ?? 0);
  };
  const timer = setInterval(() => {
    sweep().catch((err: unknown) => log(`postgres: sweeping expired rows failed: ${err instanceof Error ? err.message : String(err)}`));
  }, opts.sweepEveryMs ?? 600_000);
  timer.unref();

  let closed = false;
  const store: PostgresStore = {
    engine: 'postgres',
    description: describeTarget(target),
    transcripts: transcriptRepo(db),
    runs: runRepo(db),
    approvals: approvalRepo(db),
    allowlists: allowlistRepo(db),
    events: eventLedger(db),
    memory: memoryRepo(db),
    reminders: reminderRepo(db),
    cache: cacheRepo(db),
    async checkpoint(cp: Checkpoint) {
      await db.tx(`checkpoint ${cp.transcript?.conversation ?? cp.record?.conversation ?? cp.dropTurn?.conversation ?? ''}`.trim(), async (c) => {
        if (cp.transcript) await applyWrite(db, c, cp.transcript);
        if (cp.dropTurn) await db.q(c, 'DELETE FROM queued_turns WHERE conversation = $1 AND id = $2', [cp.dropTurn.conversation, cp.dropTurn.id]);
        if (cp.record) {
          if (cp.record.record === null) {
            await db.q(c, 'DELETE FROM run_records WHERE conversation = $1', [cp.record.conversation]);
          } else {
            await db.q(
              c,
              'INSERT INTO run_records (conversation, record) VALUES ($1, $2) ON CONFLICT (conversation) DO UPDATE SET record = EXCLUDED.record',
              [cp.record.conversation, enc(cp.record.record)],
            );
          }
        }
      });
    },
    roundTrips: () => db.roundTrips,
    sweep,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      await pool.end();
    },
  };
  return store;
}
