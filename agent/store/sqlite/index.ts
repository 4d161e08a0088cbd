/**
 * The SQLite engine: `openSqliteStore` opens (creating, migrating) a store file and returns the
 * repositories. better-sqlite3 is imported only in this folder, and runs in a worker thread
 * (./worker.ts); every statement is built here, on the main thread, in the repository modules.
 *
 * Contract (beyond agent/store/types.ts):
 * - `path` is absolute or ':memory:'. The folder is created 0700 when missing and the files are
 *   0600 (./files.ts); a folder or file that cannot be written fails naming it.
 * - `mustExist`: never creates a store; a path with no store fails naming the path, GATEHOUSE_STORE
 *   and the folder (operator commands run from the wrong folder).
 * - `exclusive`: one such process per store (`gatehouse serve`), by the lock of ./lock.ts, taken
 *   before anything else: a second exclusive open fails with a StoreError (code ALREADY_RUNNING)
 *   "already running (pid N, since <ISO time>)", having changed nothing. Non-exclusive opens work
 *   beside it.
 * - Expired approvals (with their tokens), event ids and spend totals of past periods are deleted at
 *   open and every `sweepMs`.
 * - close() stops the sweep, checkpoints the WAL in full and closes; calls after it reject.
 */
import { spendPurgeStatement, sqliteSpend } from './spend.js';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { FencedError, StoreConflictError, StoreError, type Checkpoint, type Fence, type Store, type TranscriptWrite } from '../types.js';
import { sqliteApprovals, sweepStatements } from './approvals.js';
import { createPrivate, narrowStoreFiles, narrowStorePermissions, PERMISSION_CODES, storeProblem } from './files.js';
import { migrate } from './migrate.js';
import { sqliteAllowlists, sqliteCache, sqliteEvents, sqliteMemory, sqliteReminders } from './misc.js';
import { dropRecordStatement, dropTurnStatement, saveRecordStatement, sqliteRuns } from './runs.js';
import { revisionStatement, sqliteTranscripts, writeStatements } from './transcripts.js';
import { sqliteSignals } from './signals.js';
import { alreadyRunning, recordHolder } from './lock.js';
import { fenceStatement, sqliteLeases } from './leases.js';
import { soleLeadership } from './leadership.js';
import { startSqliteWorker, WorkerError, type Row, type SqliteWorker, type Statement } from './worker.js';
import { fallbackLog, prefixedLog, type Log, messageOf } from '../../log.js';

export interface SqliteStoreOptions {
  /** Absolute, or ':memory:'. */
  path: string;
  exclusive?: boolean;
  mustExist?: boolean;
  log?: Log;
  now?: () => number;
  /** How often expired rows are deleted (default hourly; also once at open). */
  sweepMs?: number;
  /** How often the WAL is copied into the file when there were writes (default 250 ms). */
  checkpointMs?: number;
}

const SWEEP_BATCH = 500;

export async function openSqliteStore(opts: SqliteStoreOptions): Promise<Store> {
  const { path } = opts;
  const log = prefixedLog(opts.log ?? fallbackLog, '[store] ');
  const now = opts.now ?? Date.now;
  const onDisk = path !== ':memory:';
  const description = `sqlite://${path}`;
  const fail = (why: string, code?: string) => new StoreError(`cannot open the store (${description}): ${why}`, code);
  const notAStore = () =>
    new StoreError(
      `there is no Gatehouse store at ${path}: run this from the folder Gatehouse runs in (the one holding data/gatehouse.sqlite; looked in ${dirname(path)}), ` +
        `or set GATEHOUSE_STORE=sqlite://<path to the store file>`,
      'NO_STORE',
    );
  if (onDisk) {
    if (opts.mustExist && !existsSync(path)) throw notAStore();
    const problem = storeProblem(path);
    if (problem) throw fail(problem, problem.startsWith('permission problem') ? 'PERMISSION' : 'BAD_PATH');
    try {
      createPrivate(path);
    } catch (err) {
      throw fail(messageOf(err));
    }
    narrowStorePermissions(path, log);
  }
  const sqliteFail = (err: unknown): StoreError => {
    if (err instanceof StoreError) return err;
    const code = String((err as { code?: unknown }).code ?? '');
    if (PERMISSION_CODES.has(code)) return fail(`permission problem in the store folder ${dirname(path)}: ${messageOf(err)} (${code})`, 'PERMISSION');
    return fail(messageOf(err), code || undefined);
  };

  // The lock first (the worker takes it before it opens the store): a second `serve` must change
  // nothing, not even by migrating.
  const lockPath = onDisk && opts.exclusive ? `${path}.lock` : undefined;
  let worker: SqliteWorker;
  try {
    if (lockPath) createPrivate(lockPath);
    worker = await startSqliteWorker(path, { lockPath, mustExist: opts.mustExist, checkpointMs: opts.checkpointMs, log });
  } catch (err) {
    if (err instanceof WorkerError && err.code === 'GATEHOUSE_LOCKED') throw alreadyRunning(path);
    throw sqliteFail(err);
  }
  const forgetHolder = lockPath ? recordHolder(path, log) : () => undefined;
  try {
    await migrate(worker, { path, mustExist: opts.mustExist ?? false, now: now(), log, notAStore });
    await sweep(worker, now());
    // The WAL and SHM exist now: made by this SQLite they are 0600 already; left by another, narrowed.
    if (onDisk) narrowStoreFiles(path, log);
  } catch (err) {
    forgetHolder();
    await worker.close().catch(() => undefined);
    throw sqliteFail(err);
  }

  const exec = (stmts: Statement[]) => worker.batch(stmts);
  /** Runs `stmts`, whose statement `head` is a transcript's revision check; a failed check is a conflict. */
  // A fence is the batch's first statement: a moved epoch rolls everything back.
  const guarded = async (stmts: Statement[], head: number, w: TranscriptWrite | undefined, fence?: Fence): Promise<unknown[]> => {
    const f = fence ? 1 : 0;
    try {
      return (await exec(fence ? [fenceStatement(fence), ...stmts] : stmts)).slice(f);
    } catch (err) {
      if (fence && err instanceof WorkerError && err.code === 'GATEHOUSE_PRECONDITION' && err.index === 0) {
        const current = await leases.current(fence.conversation);
        throw new FencedError(fence, current?.epoch);
      }
      if (w && err instanceof WorkerError && err.code === 'GATEHOUSE_PRECONDITION' && err.index === head + f) {
        const [row] = (await exec([revisionStatement(w.conversation)])) as [Row | undefined];
        throw new StoreConflictError(w.conversation, w.expectRevision ?? 0, row ? Number(row.revision) : undefined);
      }
      throw err;
    }
  };
  const written = (results: unknown[], head: number) => {
    const revision = Number((results[head] as Row).revision);
    return { revision, created: revision === 1 };
  };
  const leases = sqliteLeases(exec);
  const write = async (w: TranscriptWrite) => {
    const { stmts, head } = writeStatements(w);
    return written(await guarded(stmts, head, w, w.fence), head);
  };

  let timer: NodeJS.Timeout | undefined = setInterval(() => {
    sweep(worker, now()).catch((err: unknown) => log('warn', `deleting expired entries failed: ${messageOf(err)}`));
  }, opts.sweepMs ?? 3_600_000);
  timer.unref();
  let closed = false;

  return {
    engine: 'sqlite',
    description,
    exclusive: opts.exclusive === true,
    transcripts: sqliteTranscripts(exec, write),
    runs: sqliteRuns(exec),
    leases,
    approvals: sqliteApprovals(exec),
    allowlists: sqliteAllowlists(exec),
    events: sqliteEvents(exec),
    memory: sqliteMemory(exec),
    reminders: sqliteReminders(exec),
    cache: sqliteCache(exec),
    spend: sqliteSpend(exec),
    signals: sqliteSignals(() => closed),
    async checkpoint(c: Checkpoint) {
      const stmts: Statement[] = [];
      let head = -1;
      if (c.transcript) {
        const t = writeStatements(c.transcript);
        head = t.head;
        stmts.push(...t.stmts);
      }
      if (c.dropTurn) stmts.push(dropTurnStatement(c.dropTurn.conversation, c.dropTurn.id));
      if (c.record)
        stmts.push(c.record.record === null ? dropRecordStatement(c.record.conversation) : saveRecordStatement(c.record.conversation, c.record.record));
      if (stmts.length === 0) return;
      const results = await guarded(stmts, head, c.transcript, c.fence ?? c.transcript?.fence);
      return c.transcript ? { revision: written(results, head).revision } : undefined;
    },
    async ping(timeoutMs = 2_000) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new StoreError(`the store (${description}) did not answer within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        await Promise.race([exec([{ sql: 'SELECT 1', params: [], mode: 'get' }]), late]);
      } finally {
        clearTimeout(timer);
      }
    },
    leadership: (role) => soleLeadership(role),
    async close() {
      if (closed) return;
      closed = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      forgetHolder();
      await worker.close();
    },
  };
}

/** Deletes expired rows in bounded batches, other calls served in between. */
async function sweep(worker: SqliteWorker, now: number): Promise<void> {
  for (;;) {
    const results = (await worker.batch([...sweepStatements(now, SWEEP_BATCH), spendPurgeStatement(now, SWEEP_BATCH)])) as Array<{ changes: number }>;
    if (!results.some((r) => r.changes >= SWEEP_BATCH)) return;
  }
}
