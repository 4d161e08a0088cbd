/**
 * The SQLite connection in a worker thread, as a generic executor: the main thread sends a batch of
 * statements, the worker runs them in ONE transaction and sends the results back. All SQL lives in
 * the repository modules beside this one; the worker knows only pragmas, checkpoints and the lock.
 *
 * Why a worker: every better-sqlite3 call is synchronous; commits and checkpoints cost milliseconds,
 * which on the main thread showed as event-loop delay for every other chat (Telegram benchmark).
 * Why better-sqlite3: node-sqlite3 finished statements on the thread pool and, when one completed
 * while the worker was torn down, aborted the whole process (exit 134, `napi_throw`). better-sqlite3
 * has nothing in flight between calls: when the worker's event loop is idle, SQLite is idle.
 * The body is plain JavaScript run with `eval: true` (jest's and the TS loader's module hooks do not
 * apply to a worker file; agent/tools/builtin/grep-worker.ts makes the same choice); it loads better-sqlite3 by
 * the path resolved here.
 *
 * Contract:
 * - `startSqliteWorker(path, opts)` opens one connection (WAL, synchronous=NORMAL, busy timeout,
 *   no auto-checkpoint) and resolves when usable; a file that cannot be opened rejects with SQLite's
 *   message and code (SQLITE_CANTOPEN, SQLITE_READONLY...).
 * - With `lockPath`, it first takes an OS-level lock (SQLite's own fcntl lock, exclusive locking
 *   mode, on a small separate database): released by the kernel when the process dies (kill -9),
 *   so pid reuse cannot fool it. Held: rejects with code GATEHOUSE_LOCKED.
 * - `batch(stmts, { transaction })` runs the statements in order in one transaction (BEGIN
 *   IMMEDIATE when any writes) and resolves with one result per statement: `run` -> {changes},
 *   `get` -> the row or undefined, `all` -> the rows. A statement marked `require` that returns no
 *   row (get/all) or changes nothing (run) rolls the whole batch back and rejects with code
 *   GATEHOUSE_PRECONDITION and the statement's index. Prepared statements are cached by SQL text.
 *   `transaction: false` runs them one by one (VACUUM INTO cannot run in a transaction).
 * - Checkpoints run in a second worker on a connection of its own (the checkpointer), every
 *   `checkpointMs` (PASSIVE; RESTART once the WAL is `restartFrames` long), beside the batches, not
 *   between them: a checkpoint copies pages and syncs the file (4-13 ms measured under the Telegram
 *   bench), and on the store's own thread every call waited for it. WAL lets a passive checkpoint
 *   run while the store writes, and the checkpointer never waits on a lock (a RESTART a reader holds
 *   up says busy and is tried next time, instead of holding the store's writers back for up to the
 *   busy timeout). Should the checkpointer stop, the store worker checkpoints between
 *   batches again (and says so). At close, the checkpointer stops first, then the store checkpoints
 *   in full (TRUNCATE); commits never checkpoint.
 * - After close() or a crash every call rejects; nothing is dropped quietly. The worker holds the
 *   process open only while calls are pending and during close(), which resolves once it has
 *   checkpointed, closed its connections and ended by itself.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { storeRoundTrips } from '../round-trips.js';
import type { Log } from '../../log.js';

const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);

const onDisk = workerData.path !== ':memory:';
const readonly = Boolean(workerData.readonly);
// 'store' runs the batches; 'checkpointer' only checkpoints, on its own connection.
const checkpointer = workerData.role === 'checkpointer';
let db;
let lockDb;
const cache = new Map();
let writesSinceCheckpoint = 0;
let closing = false;
let timer;

function prepare(sql) {
  let s = cache.get(sql);
  if (!s) {
    s = db.prepare(sql);
    cache.set(sql, s);
  }
  return s;
}

function takeLock() {
  lockDb = new Database(workerData.lockPath, { timeout: 0 });
  try {
    lockDb.pragma('locking_mode = EXCLUSIVE');
    lockDb.exec('CREATE TABLE IF NOT EXISTS holder(pid INTEGER, since INTEGER)');
    // A write in exclusive locking mode keeps the file's lock until the connection closes.
    lockDb.exec('BEGIN EXCLUSIVE; DELETE FROM holder; COMMIT');
    lockDb.prepare('INSERT INTO holder VALUES (?, ?)').run(process.pid, Date.now());
  } catch (err) {
    try { lockDb.close(); } catch {}
    lockDb = undefined;
    if (err && (err.code === 'SQLITE_BUSY' || err.code === 'SQLITE_LOCKED')) {
      const e = new Error('the store is locked by another process');
      e.code = 'GATEHOUSE_LOCKED';
      throw e;
    }
    throw err;
  }
}

function open() {
  if (checkpointer) {
    // No busy wait: a RESTART that would wait for a reader (an operator's long read, a backup)
    // holds the store's writers back while it waits; it says busy at once and is tried next time.
    db = new Database(workerData.path, { timeout: 0, fileMustExist: true });
    db.pragma('wal_autocheckpoint = 0');
    return;
  }
  if (workerData.lockPath) takeLock();
  db = new Database(workerData.path, { timeout: workerData.busyTimeoutMs, fileMustExist: workerData.mustExist, readonly });
  if (onDisk && !readonly) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 0');
    db.pragma('journal_size_limit = ' + 64 * 1024 * 1024);
  }
}

function log(message) {
  parentPort.postMessage({ type: 'log', message });
}

function checkpoint(final) {
  // The checkpointer cannot see the writes: a passive checkpoint of a WAL with nothing new is cheap.
  if (!onDisk || readonly || (!final && !checkpointer && writesSinceCheckpoint === 0)) return;
  writesSinceCheckpoint = 0;
  try {
    if (final) return void db.pragma('wal_checkpoint(TRUNCATE)');
    const [passive] = db.pragma('wal_checkpoint(PASSIVE)');
    if (passive && passive.log >= workerData.restartFrames) db.pragma('wal_checkpoint(RESTART)');
  } catch (err) {
    if (checkpointer && err && err.code === 'SQLITE_BUSY') return; // next time
    log('checkpoint failed: ' + err.message);
  }
}

function runOne(st, i) {
  const s = prepare(st.sql);
  let result;
  let empty;
  if (st.mode === 'run') {
    const r = s.run(...st.params);
    result = { changes: r.changes };
    empty = r.changes === 0;
  } else if (st.mode === 'get') {
    result = s.get(...st.params);
    empty = result === undefined;
  } else {
    result = s.all(...st.params);
    empty = result.length === 0;
  }
  if (st.require && empty) {
    const e = new Error('precondition failed at statement ' + i);
    e.code = 'GATEHOUSE_PRECONDITION';
    e.index = i;
    throw e;
  }
  return result;
}

function runBatch(m) {
  const stmts = m.stmts;
  if (!m.transaction) return stmts.map(runOne);
  const writes = stmts.some((st) => !prepare(st.sql).readonly);
  if (writes) writesSinceCheckpoint++;
  db.exec(writes ? 'BEGIN IMMEDIATE' : 'BEGIN');
  try {
    const out = stmts.map(runOne);
    db.exec('COMMIT');
    return out;
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

function checkpointEvery(ms) {
  timer = setInterval(() => checkpoint(false), ms);
  timer.unref();
}

parentPort.on('message', (m) => {
  if (m.type === 'checkpoint-here') {
    if (!timer && onDisk && !readonly) checkpointEvery(workerData.checkpointMs);
    return;
  }
  if (m.type === 'close') {
    if (checkpointer) {
      if (timer) clearInterval(timer);
      try { db.close(); } catch {}
      parentPort.close();
      return;
    }
    closing = true;
    if (timer) clearInterval(timer);
    if (db) {
      checkpoint(true);
      try { db.close(); } catch (err) { log('closing failed: ' + err.message); }
    }
    if (lockDb) {
      try { lockDb.close(); } catch {}
    }
    parentPort.close();
    return;
  }
  try {
    if (closing) throw new Error('the store is closed');
    parentPort.postMessage({ type: 'result', id: m.id, result: runBatch(m) });
  } catch (err) {
    parentPort.postMessage({ type: 'result', id: m.id, error: String(err && err.message ? err.message : err), code: err && err.code, index: err && err.index });
  }
});

try {
  open();
  if (checkpointer) checkpointEvery(workerData.checkpointMs);
  parentPort.postMessage({ type: 'ready' });
} catch (err) {
  try { if (db) db.close(); } catch {}
  try { if (lockDb) lockDb.close(); } catch {}
  parentPort.postMessage({ type: 'failed', error: String(err && err.message ? err.message : err), code: err && err.code });
}
`;

type StatementMode = 'run' | 'get' | 'all';

export interface Statement {
  sql: string;
  params: unknown[];
  mode: StatementMode;
  /** No row (get/all) or no change (run) rolls the batch back (GATEHOUSE_PRECONDITION). */
  require?: boolean;
}

export type Row = Record<string, unknown>;

/** An error from the worker, with SQLite's code (or GATEHOUSE_*) and, for a precondition, the index. */
export class WorkerError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly index: number | undefined,
  ) {
    super(message);
  }
}

export interface SqliteWorker {
  batch(stmts: Statement[], opts?: { transaction?: boolean }): Promise<unknown[]>;
  close(): Promise<void>;
}

export interface SqliteWorkerOptions {
  /** Take the exclusive process lock on this file first. */
  lockPath?: string;
  mustExist?: boolean;
  /** Reads only: no pragmas, no checkpoint (a peek at a store another process holds). */
  readonly?: boolean;
  checkpointMs?: number;
  restartFrames?: number;
  busyTimeoutMs?: number;
  log?: Log;
}

type Reply =
  | { type: 'ready' }
  | { type: 'log'; message: string }
  | { type: 'failed'; error: string; code?: string }
  | { type: 'result'; id: number; result?: unknown[]; error?: string; code?: string; index?: number };

/** What a worker of either role starts with (the checkpointer takes no process lock). */
function workerDataFor(path: string, opts: SqliteWorkerOptions, role: 'store' | 'checkpointer') {
  return {
    role,
    path,
    lockPath: role === 'store' ? opts.lockPath : undefined,
    mustExist: opts.mustExist ?? false,
    readonly: opts.readonly ?? false,
    driver: createRequire(import.meta.url).resolve('better-sqlite3'),
    checkpointMs: opts.checkpointMs ?? 250,
    restartFrames: opts.restartFrames ?? 2000,
    busyTimeoutMs: opts.busyTimeoutMs ?? 10_000,
  };
}

/** Resolves once a worker said it is ready; rejects (and ends it) when it failed or stopped first. */
async function readyOf(worker: Worker, gone: () => Error | undefined): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const onReady = (m: Reply) => {
      if (m.type === 'ready') resolve();
      else if (m.type === 'failed') reject(new WorkerError(m.error, m.code, undefined));
      else return;
      worker.off('message', onReady);
    };
    worker.on('message', onReady);
    worker.once('exit', () => reject(gone() ?? new Error("the store's worker stopped while opening")));
  }).catch(async (err: unknown) => {
    await worker.terminate();
    throw err;
  });
}

/**
 * The checkpointer worker beside the store's. `stopped` is called if it ends before `close()`, so
 * the store worker takes the checkpoints over.
 */
async function startCheckpointer(path: string, opts: SqliteWorkerOptions, stopped: (why: string) => void): Promise<{ close(): Promise<void> }> {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: workerDataFor(path, opts, 'checkpointer') });
  let closing = false;
  let ended = false;
  worker.on('message', (m: Reply) => {
    if (m.type === 'log') opts.log?.('warn', `checkpointer: ${m.message}`);
  });
  worker.on('error', (err) => {
    if (!closing) stopped(err.message);
  });
  worker.on('exit', (code) => {
    ended = true;
    if (!closing) stopped(`exit code ${code}`);
  });
  await readyOf(worker, () => undefined);
  worker.unref();
  return {
    async close() {
      closing = true;
      if (ended) return;
      await endWorker(worker);
    },
  };
}

/** Asks a worker to close and resolves once it has exited; the process waits for it meanwhile. */
async function endWorker(worker: Worker): Promise<void> {
  const exited = new Promise<void>((r) => worker.once('exit', () => r()));
  worker.ref();
  worker.postMessage({ type: 'close' });
  // Only a stuck disk gets as far as this timer.
  const timer = setTimeout(() => void worker.terminate(), 30_000);
  timer.unref();
  await exited;
  clearTimeout(timer);
}

export async function startSqliteWorker(path: string, opts: SqliteWorkerOptions = {}): Promise<SqliteWorker> {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: workerDataFor(path, opts, 'store') });
  const pending = new Map<number, { resolve: (v: unknown[]) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  let gone: Error | undefined;
  let closeRequested = false;
  let ready = false;

  const settleAll = (err: Error) => {
    gone ??= err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  worker.on('message', (m: Reply) => {
    if (m.type === 'log') return opts.log?.('warn', m.message);
    if (m.type !== 'result') return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (pending.size === 0 && !closeRequested) worker.unref();
    if (m.error === undefined) p.resolve(m.result ?? []);
    else p.reject(new WorkerError(m.error, m.code, m.index));
  });
  worker.on('error', (err) => {
    opts.log?.('error', `the store's worker failed: ${err.message}`);
    settleAll(new Error(`the store's worker failed: ${err.message}`));
  });
  worker.on('exit', (code) => {
    if (!ready || closeRequested) return settleAll(new Error('the store is closed'));
    const err = new Error(`the store's worker has stopped (exit code ${code})`);
    opts.log?.('error', `${err.message}: every store call fails from now on; restart Gatehouse`);
    settleAll(err);
  });

  await readyOf(worker, () => gone);
  ready = true;
  worker.unref();
  const checkpointHere = (why: string) => {
    opts.log?.('warn', `the store's checkpointer stopped (${why}): the store's worker checkpoints between its calls from now on`);
    if (!gone) worker.postMessage({ type: 'checkpoint-here' });
  };
  // Started beside the first calls, not before them: the store answers at once.
  let checkpoints: Promise<{ close(): Promise<void> } | undefined> = Promise.resolve(undefined);
  if (path !== ':memory:' && !opts.readonly) {
    checkpoints = startCheckpointer(path, opts, checkpointHere).catch((err: unknown) => {
      checkpointHere(err instanceof Error ? err.message : String(err));
      return undefined;
    });
  }

  return {
    batch(stmts, o = {}) {
      if (gone) return Promise.reject(gone);
      storeRoundTrips.count++;
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        if (pending.size === 1) worker.ref();
        worker.postMessage({ type: 'batch', id, stmts, transaction: o.transaction ?? true });
      });
    },
    async close() {
      // First, so the store's final (TRUNCATE) checkpoint has the file to itself.
      const checkpointer = await checkpoints;
      checkpoints = Promise.resolve(undefined);
      await checkpointer?.close();
      if (gone) return;
      closeRequested = true;
      await endWorker(worker);
    },
  };
}
