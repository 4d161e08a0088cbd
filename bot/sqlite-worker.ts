/**
 * The SQLite store in a worker thread: better-sqlite3 runs there, keyv stays on the main thread.
 *
 * Why a worker: every SQLite call is synchronous in better-sqlite3 (and the old driver did part of
 * each query on the main thread); commits and checkpoints cost milliseconds. In the Telegram
 * benchmark that time on the main thread showed as event-loop delay. Here the main thread only
 * posts strings (keyv has already serialized the value) and reads strings back.
 *
 * Why better-sqlite3: node-sqlite3 (under @keyv/sqlite) finished statements on the thread pool and
 * converted rows in a callback; when one completed while the worker was being torn down (a SIGTERM
 * a second after a message), N-API threw into a dying environment and the whole process aborted
 * (exit 134, `napi_throw` in `Statement::RowToJS`). better-sqlite3 has no callbacks and nothing in
 * flight between calls: when the worker's event loop is idle, SQLite is idle.
 *
 * Contract:
 * - `startSqliteWorker(path, namespaces)` opens one connection in one worker (WAL,
 *   synchronous=NORMAL, a busy timeout) and resolves when it is usable; a file that cannot be opened
 *   rejects with SQLite's message (and its code, e.g. SQLITE_CANTOPEN, SQLITE_READONLY).
 * - `store(namespace)` is a keyv store adapter (get, set, delete, has, clear, iterator), used as
 *   `new Keyv({ store, namespace })`, plus `claim` (an atomic set-if-absent, see bot/storage.ts) and
 *   `setUndecided` (an atomic compare-and-set: first decision of an approval wins), and `setIfRev` (a
 *   compare-and-set on a value's `rev`: a reminder fires once).
 *   Keys arrive with keyv's namespace prefix; the table is @keyv/sqlite's (`keyv(key, value)`), so
 *   files written by earlier versions open unchanged.
 * - Every call resolves after SQLite finished it; a failure rejects with SQLite's error.
 *   After the worker has gone (close(), or a crash) every call rejects; nothing is dropped quietly.
 * - The worker holds the process open only while calls are pending, and during close(), which
 *   resolves once the worker has checkpointed, closed its connection and ended by itself.
 * - Checkpoints run between calls, every `checkpointMs` when there were writes (PASSIVE; RESTART
 *   once the WAL is `restartFrames` long), and in full (TRUNCATE) at close; commits never
 *   checkpoint. Expired entries (keyv TTLs: dedupe ids, tokens) are deleted every `sweepMs`.
 * - `iterator` reads the whole namespace in the worker and yields it: meant for small namespaces
 *   (the runner's live runs), not for transcripts.
 *
 * The worker body is plain JavaScript run with `eval: true` (see grep-worker.ts for why); it
 * loads better-sqlite3 by the path resolved here.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);

const onDisk = workerData.path !== ':memory:';
const EXPIRES = "(CASE WHEN json_valid(value) THEN json_extract(value, '$.expires') END)";
let db;
let sql;
let writesSinceCheckpoint = 0;
let closing = false;
const timers = [];

function open() {
  db = new Database(workerData.path, { timeout: 10000 });
  if (onDisk) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    // Checkpoints run between calls (checkpoint()), never inside a commit.
    db.pragma('wal_autocheckpoint = 0');
    db.pragma('journal_size_limit = ' + 64 * 1024 * 1024);
  }
  db.exec('CREATE TABLE IF NOT EXISTS keyv(key VARCHAR(255) PRIMARY KEY, value TEXT)');
  sql = {
    get: db.prepare('SELECT value FROM keyv WHERE key = ?').pluck(),
    set: db.prepare('INSERT INTO keyv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value'),
    delete: db.prepare('DELETE FROM keyv WHERE key = ? RETURNING key').pluck(),
    has: db.prepare('SELECT EXISTS (SELECT 1 FROM keyv WHERE key = ?)').pluck(),
    clearPrefix: db.prepare('DELETE FROM keyv WHERE substr(key, 1, length(?)) = ?'),
    list: db.prepare('SELECT key, value FROM keyv WHERE substr(key, 1, length(?)) = ? ORDER BY key').raw(),
    // Writes the entry unless a live one (not expired at 'now') exists; returns a row when it wrote.
    // One statement: two claims of the same key can never both win, in any number of processes.
    claim: db.prepare(
      'INSERT INTO keyv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value ' +
        'WHERE ' + EXPIRES + ' < ? RETURNING key',
    ).pluck(),
    // Compare-and-set: replaces a live entry whose value has no 'decision' yet; a row when it did.
    setUndecided: db.prepare(
      "UPDATE keyv SET value = ? WHERE key = ? AND json_valid(value) AND json_type(value, '$.value') = 'object' " +
        "AND json_type(value, '$.value.decision') IS NULL AND coalesce(json_extract(value, '$.expires') >= ?, 1) RETURNING key",
    ).pluck(),
    // Compare-and-set on a revision counter (reminders: one claim per fire); a row when it wrote.
    setIfRev: db.prepare(
      "UPDATE keyv SET value = ? WHERE key = ? AND json_valid(value) AND json_extract(value, '$.value.rev') = ? RETURNING key",
    ).pluck(),
    sweep: db.prepare('DELETE FROM keyv WHERE rowid IN (SELECT rowid FROM keyv WHERE ' + EXPIRES + ' < ? LIMIT 500)'),
  };
}

function log(message) {
  parentPort.postMessage({ type: 'log', message });
}

/** final: at close, copy everything and empty the WAL file. */
function checkpoint(final) {
  if (!onDisk || (!final && writesSinceCheckpoint === 0)) return;
  writesSinceCheckpoint = 0;
  try {
    if (final) return void db.pragma('wal_checkpoint(TRUNCATE)');
    // A PASSIVE checkpoint copies what no reader needs; the WAL only starts over (RESTART) when it
    // is wholly copied, so a long one is restarted. Nothing else runs on this connection meanwhile.
    const [passive] = db.pragma('wal_checkpoint(PASSIVE)');
    if (passive && passive.log >= workerData.restartFrames) db.pragma('wal_checkpoint(RESTART)');
  } catch (err) {
    log('checkpoint failed: ' + err.message);
  }
}

// keyv deletes an expired entry only when it is read again; dedupe ids and used tokens never are.
// Expired rows go in small batches, with other calls served in between.
function sweep() {
  if (closing) return;
  try {
    const { changes } = sql.sweep.run(Date.now());
    if (changes > 0) writesSinceCheckpoint++;
    if (changes === 500) setImmediate(sweep);
  } catch (err) {
    log('sweeping expired entries failed: ' + err.message);
  }
}

function handle(m) {
  if (closing) throw new Error('the store is closed');
  const [key, value, now] = m.args;
  switch (m.method) {
    case 'get': {
      const v = sql.get.get(key);
      return v === null ? undefined : v;
    }
    case 'has':
      return sql.has.get(key) === 1;
    case 'list': {
      const prefix = key ? key + ':' : '';
      return sql.list.all(prefix, prefix);
    }
  }
  writesSinceCheckpoint++;
  switch (m.method) {
    case 'set':
      sql.set.run(key, value);
      return undefined;
    case 'delete':
      return sql.delete.get(key) !== undefined;
    case 'clear': {
      const prefix = m.ns + ':';
      sql.clearPrefix.run(prefix, prefix);
      return undefined;
    }
    case 'claim':
      return sql.claim.get(key, value, now) !== undefined;
    case 'setUndecided':
      return sql.setUndecided.get(value, key, now) !== undefined;
    case 'setIfRev':
      return sql.setIfRev.get(value, key, now) !== undefined;
  }
  throw new Error('unsupported store call ' + m.method);
}

parentPort.on('message', (m) => {
  if (m.type === 'close') {
    // Everything into the database file, and the WAL emptied, before the connection goes; then
    // the worker ends on its own.
    closing = true;
    for (const t of timers) clearInterval(t);
    if (db) {
      checkpoint(true);
      try {
        db.close();
      } catch (err) {
        log('closing failed: ' + err.message);
      }
    }
    parentPort.close();
    return;
  }
  try {
    parentPort.postMessage({ type: 'result', id: m.id, result: handle(m) });
  } catch (err) {
    parentPort.postMessage({ type: 'result', id: m.id, error: String(err && err.message ? err.message : err), code: err && err.code });
  }
});

try {
  open();
  if (onDisk) {
    timers.push(setInterval(() => checkpoint(false), workerData.checkpointMs));
    timers.push(setInterval(sweep, workerData.sweepMs));
    for (const t of timers) t.unref();
    setImmediate(sweep);
  }
  parentPort.postMessage({ type: 'ready' });
} catch (err) {
  try {
    if (db) db.close();
  } catch {}
  parentPort.postMessage({ type: 'failed', error: String(err && err.message ? err.message : err), code: err && err.code });
}
`;

type Reply =
  | { type: 'ready' }
  | { type: 'log'; message: string }
  | { type: 'failed'; error: string; code?: unknown }
  | { type: 'result'; id: number; result?: unknown; error?: string; code?: unknown };

export interface SqliteWorker {
  store(namespace: string): WorkerStore;
  close(): Promise<void>;
}

export interface SqliteWorkerOptions {
  /** How often the WAL is copied into the database file when there were writes (default 250 ms). */
  checkpointMs?: number;
  /** A WAL this long (in 4 KB pages) is started over at the next checkpoint (default 2,000). */
  restartFrames?: number;
  /** How often expired entries are deleted (default hourly; also once at start). */
  sweepMs?: number;
  log?: (msg: string) => void;
}

export async function startSqliteWorker(path: string, namespaces: readonly string[], opts: SqliteWorkerOptions = {}): Promise<SqliteWorker> {
  const require = createRequire(import.meta.url);
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      path,
      namespaces: [...namespaces],
      driver: require.resolve('better-sqlite3'),
      checkpointMs: opts.checkpointMs ?? 250,
      restartFrames: opts.restartFrames ?? 2000,
      sweepMs: opts.sweepMs ?? 3_600_000,
    },
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
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
    if (m.type === 'log') return opts.log?.(m.message);
    if (m.type !== 'result') return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    // Idle, the worker must not keep the process alive; closing, it must (close() awaits its exit).
    if (pending.size === 0 && !closeRequested) worker.unref();
    if (m.error === undefined) p.resolve(m.result);
    else p.reject(Object.assign(new Error(m.error), m.code !== undefined ? { code: m.code } : {}));
  });
  worker.on('error', (err) => {
    opts.log?.(`the store's worker failed: ${err.message}`);
    settleAll(new Error(`the store's worker failed: ${err.message}`));
  });
  worker.on('exit', (code) => {
    // Before it was ready the opening fails with its own reason; after close() it was asked to end.
    if (!ready || closeRequested) return settleAll(new Error('the store is closed'));
    const err = new Error(`the store's worker has stopped (exit code ${code})`);
    opts.log?.(`${err.message}: every store call fails from now on; restart Gatehouse`);
    settleAll(err);
  });

  await new Promise<void>((resolve, reject) => {
    const onReady = (m: Reply) => {
      if (m.type === 'ready') resolve();
      else if (m.type === 'failed') reject(Object.assign(new Error(m.error), m.code !== undefined ? { code: m.code } : {}));
      else return;
      worker.off('message', onReady);
    };
    worker.on('message', onReady);
    worker.once('exit', () => reject(gone ?? new Error("the store's worker stopped while opening")));
  }).catch(async (err: unknown) => {
    await worker.terminate();
    throw err;
  });
  ready = true;
  worker.unref();

  const call = (ns: string, method: string, args: unknown[]): Promise<unknown> => {
    if (gone) return Promise.reject(gone);
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      if (pending.size === 1) worker.ref();
      worker.postMessage({ type: 'call', id, ns, method, args });
    });
  };

  return {
    store: (namespace) => new WorkerStore(namespace, call),
    async close() {
      if (gone) return;
      closeRequested = true;
      const exited = new Promise<void>((r) => worker.once('exit', () => r()));
      worker.ref();
      worker.postMessage({ type: 'close' });
      // The worker exits by itself once it has checkpointed and closed the connection; only a stuck
      // disk gets as far as this timer.
      const timer = setTimeout(() => void worker.terminate(), 30_000);
      timer.unref();
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A keyv store adapter whose calls run in the SQLite worker. */
export class WorkerStore extends EventEmitter {
  /** keyv lists only stores whose dialect it knows (`iterator` support). */
  readonly opts = { dialect: 'sqlite', url: 'sqlite-worker' };
  namespace?: string;

  constructor(
    private readonly ns: string,
    private readonly call: (ns: string, method: string, args: unknown[]) => Promise<unknown>,
  ) {
    super();
  }

  get<Value>(key: string): Promise<Value | undefined> {
    return this.call(this.ns, 'get', [key]) as Promise<Value | undefined>;
  }
  async set(key: string, value: unknown): Promise<void> {
    await this.call(this.ns, 'set', [key, value]);
  }
  delete(key: string): Promise<boolean> {
    return this.call(this.ns, 'delete', [key]) as Promise<boolean>;
  }
  has(key: string): Promise<boolean> {
    return this.call(this.ns, 'has', [key]) as Promise<boolean>;
  }
  async clear(): Promise<void> {
    await this.call(this.ns, 'clear', []);
  }
  /** Writes `value` at `key` unless a live entry (not expired at `now`) is there; true when it wrote. */
  claim(key: string, value: string, now: number): Promise<boolean> {
    return this.call(this.ns, 'claim', [key, value, now]) as Promise<boolean>;
  }
  /**
   * Writes `value` at `key` only if a live entry is there whose value has no `decision` yet; true
   * when it wrote. One UPDATE ... RETURNING: of any number of processes, one wins.
   */
  setUndecided(key: string, value: string, now: number): Promise<boolean> {
    return this.call(this.ns, 'setUndecided', [key, value, now]) as Promise<boolean>;
  }
  /**
   * Writes `value` at `key` only if the stored value's `rev` is `rev`; true when it wrote. One
   * UPDATE ... RETURNING: of any number of processes that read the same revision, one wins.
   */
  setIfRev(key: string, value: string, rev: number): Promise<boolean> {
    return this.call(this.ns, 'setIfRev', [key, value, rev]) as Promise<boolean>;
  }
  async *iterator(namespace?: string): AsyncGenerator<[string, unknown], void> {
    const entries = (await this.call(this.ns, 'list', [namespace])) as Array<[string, unknown]>;
    yield* entries;
  }
}
