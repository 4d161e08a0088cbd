/**
 * Contract: `openPostgresStore` opens the PostgreSQL engine of the Store (../types.ts).
 * - Start: one connection checks the server (reachable, login, database, version >= 13) and the
 *   schema is migrated under an advisory lock; any failure is a StoreError naming host, port,
 *   database and the fix, never the password. Nothing is retried at start (the supervisor restarts).
 * - Running: a pg Pool (`poolSize`, default 10). Lost connections are retried per db.ts.
 * - Signals (./signals.ts): LISTEN/NOTIFY on one more connection of its own, opened on first use.
 * - Every `sweepEveryMs` (default 10 min, unref'd) expired event claims, approvals past their
 *   keepUntil and spend totals of past periods (./spend.ts purge) are deleted.
 * - `checkpoint` is atomic: an append-only one (the common turn: messages, turn dropped, record
 *   saved) is ONE statement; one with other changes is one transaction (BEGIN, 3 + 1 per change,
 *   1 per run part, COMMIT). Retries as transcripts.write (transcripts.ts).
 * `pg` is imported only in this folder.
 */
import { spendRepo } from './spend.js';
import pg from 'pg';
import type { Checkpoint, Store } from '../types.js';
import { randomUUID } from 'node:crypto';
import { Db, type Client } from './db.js';
import { checkServerVersion, describeTarget, parseTarget, redact, runtimeError, startupError } from './errors.js';
import { migrate } from './migrations.js';
import { postgresSignals } from './signals.js';
import { postgresLeadership } from './leadership.js';
import { allowlistRepo, approvalRepo, cacheRepo, eventLedger, memoryRepo, reminderRepo, runRepo } from './repos.js';
import { appendOnly, applyWrite, runAppend, transcriptRepo, verifyWrite } from './transcripts.js';
import { writeParts, writePartsFenced } from './run-parts.js';
import { checkFence, leaseRepo } from './leases.js';
import { openPgBossTurnQueue } from './turn-queue.js';
import type { SharedTurnQueueEngine } from '../../run/turn-queue.js';
import { fallbackLog, type Log, messageOf } from '../../log.js';

export {
  allowConnections,
  createDatabase,
  currentWalLsn,
  databaseWalBytesSince,
  terminateConnections,
  waitForServer,
} from './admin.js';

export interface PostgresStoreOptions {
  url: string;
  log?: Log;
  now?: () => number;
  poolSize?: number;
  /** How long a call keeps retrying a lost connection before it rejects (default 30 s). */
  retryForMs?: number;
  /** How often expired rows are swept (default 10 minutes). */
  sweepEveryMs?: number;
  /** How long the first connection may take (default 10 s). */
  connectTimeoutMs?: number;
}

export interface PostgresStore extends Store, SharedTurnQueueEngine {
  /** Statements sent so far (BEGIN and COMMIT count): round trips per operation, for the bench. */
  roundTrips(): number;
  /** Deletes expired rows now (the timer calls it); returns how many went. */
  sweep(): Promise<number>;
}

export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const target = parseTarget(opts.url);
  const log: Log = (level, msg, fields) => (opts.log ?? fallbackLog)(level, redact(msg, target.password), fields);
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
  pool.on('error', (err) => log('warn', `postgres: an idle connection failed: ${err.message}`));
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
    log('info', `postgres: store ${describeTarget(target)} at schema version ${m.version}${m.applied.length ? ` (applied ${m.applied.join(', ')})` : ''}`);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw startupError(err, target);
  }

  const spend = spendRepo(db);
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
    return Number((r.rows[0] as { n: string } | undefined)?.n ?? 0) + (await spend.purge(t));
  };
  const timer = setInterval(() => {
    sweep().catch((err: unknown) => log('warn', `postgres: sweeping expired rows failed: ${messageOf(err)}`));
  }, opts.sweepEveryMs ?? 600_000);
  timer.unref();

  const signals = postgresSignals({ url: opts.url, target, db, log, connectTimeoutMs: opts.connectTimeoutMs ?? 10_000 });
  let closed = false;
  const store: PostgresStore = {
    engine: 'postgres',
    description: describeTarget(target),
    transcripts: transcriptRepo(db),
    runs: runRepo(db),
    leases: leaseRepo(db),
    approvals: approvalRepo(db),
    allowlists: allowlistRepo(db),
    events: eventLedger(db),
    memory: memoryRepo(db),
    reminders: reminderRepo(db),
    cache: cacheRepo(db),
    spend,
    signals,
    async checkpoint(cp: Checkpoint): Promise<undefined | { revision: number }> {
      const what = `checkpoint ${cp.transcript?.conversation ?? cp.record?.conversation ?? cp.dropTurn?.conversation ?? ''}`.trim();
      const w = cp.transcript;
      const parts = { ...(cp.dropTurn ? { dropTurn: cp.dropTurn } : {}), ...(cp.record ? { record: cp.record } : {}) };
      const fence = cp.fence ?? w?.fence;
      if (fence) {
        // Fenced: the common checkpoint (messages appended, the turn dropped, the record saved) and a
        // checkpoint of the parts alone are ONE statement guarded by the claim (./run-parts.ts); any
        // other write checks the claim first in its transaction (BEGIN, fence, write, parts, COMMIT).
        if (!w) return void (await writePartsFenced(db, what, parts, fence));
        const nonce = randomUUID();
        const verify = (c: Client) => verifyWrite(db, c, w.conversation, nonce);
        if (appendOnly(w)) return { revision: (await db.run(what, 'once', (c) => runAppend(db, c, w, nonce, parts, fence), verify)).revision };
        const r = await db.tx(
          what,
          async (c) => {
            await checkFence(db, c, fence);
            const written = await applyWrite(db, c, w, nonce);
            await writeParts(db, c, parts);
            return written;
          },
          verify,
        );
        return { revision: r.revision };
      }
      if (w) {
        const nonce = randomUUID();
        const verify = (c: Client) => verifyWrite(db, c, w.conversation, nonce);
        // The common checkpoint (messages appended, the turn dropped, the record saved) is ONE statement.
        if (appendOnly(w)) return { revision: (await db.run(what, 'once', (c) => runAppend(db, c, w, nonce, parts), verify)).revision };
        const r = await db.tx(
          what,
          async (c) => {
            const r = await applyWrite(db, c, w, nonce);
            await writeParts(db, c, parts);
            return r;
          },
          verify,
        );
        return { revision: r.revision };
      }
      // Without a transcript the parts are idempotent: a statement lost in flight is simply rerun.
      await db.run(what, 'idempotent', (c) => writeParts(db, c, parts));
    },
    // The replicas' turn queue (pg-boss, loaded only when asked for).
    turnQueue: (o) => openPgBossTurnQueue({ ...o, url: opts.url, db, runs: store.runs, leases: store.leases }),
    async ping(timeoutMs = 2_000) {
      // Straight to the pool, no retry: readiness wants "now", not "within retryForMs".
      let t: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          pool.query('SELECT 1'),
          new Promise<never>((_, reject) => {
            t = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
      } catch (err) {
        throw runtimeError(err, target, 'ping');
      } finally {
        clearTimeout(t);
      }
    },
    leadership: (role, lopts) => postgresLeadership(opts.url, target, role, lopts),
    roundTrips: () => db.roundTrips,
    sweep,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      await signals.close();
      await pool.end();
    },
  };
  return store;
}
