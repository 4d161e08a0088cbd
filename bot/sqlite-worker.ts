/**
 * The SQLite store in a worker thread: @keyv/sqlite runs there, keyv stays on the main thread.
 *
 * Why: sqlite3 (under @keyv/sqlite) does part of every query on the main thread (statement setup,
 * sqlite3_finalize, row conversion) and takes the connection's lock there, so the event loop stalls
 * whenever the thread pool is busy writing on the same connection. In the Telegram benchmark that
 * was about 0.8 ms of main-thread time per message, and the event loop was busy while its CPU was
 * idle. Here the main thread only posts strings (keyv has already serialized the value) and reads
 * strings back.
 *
 * Contract:
 * - `startSqliteWorker(path, namespaces)` opens one @keyv/sqlite connection per namespace in one
 *   worker (WAL, synchronous=NORMAL, a busy timeout) and resolves when they are usable; a file
 *   that cannot be opened rejects with SQLite's message.
 * - `store(namespace)` is a keyv store adapter (get, set, delete, has, clear, iterator), used as
 *   `new Keyv({ store, namespace })`, plus `claim` (an atomic set-if-absent, see bot/storage.ts).
 *   Keys arrive with keyv's namespace prefix, exactly as @keyv/sqlite would store them
 *   in-process, so the file format is @keyv/sqlite's.
 * - Every call resolves after SQLite finished it; a failure rejects with SQLite's error.
 *   After the worker has gone (close(), or a crash) every call rejects; nothing is dropped quietly.
 * - The worker holds the process open only while calls are pending, and during close(), which
 *   resolves once the worker has closed its connections and ended by itself.
 * - Checkpoints run on a connection of their own, every `checkpointMs` when there were writes, and
 *   in full (TRUNCATE) at close; commits never checkpoint (see WORKER_SOURCE). Expired entries
 *   (keyv TTLs: dedupe ids, tokens) are deleted every `sweepMs`.
 * - `iterator` reads the whole namespace in the worker and yields it: meant for small namespaces
 *   (the runner's live runs), not for transcripts.
 *
 * The worker body is plain JavaScript run with `eval: true` (see grep-worker.ts for why); it
 * loads keyv's CommonJS builds by the paths resolved here.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const sqliteModule = require(workerData.keyvSqlite);
const KeyvSqlite = sqliteModule.KeyvSqlite ?? sqliteModule.default ?? sqliteModule;

class SqliteStore extends KeyvSqlite {
  // One query instead of @keyv/sqlite's read-then-delete.
  async delete(key) {
    const rows = await this.query('DELETE FROM ' + this.opts.table + ' WHERE key = ? RETURNING key', key);
    return rows.length > 0;
  }

  // Writes the entry unless a live one (not expired at 'now') exists; true when it wrote. One
  // atomic statement: two messages with the same id can never both be first.
  async claim(key, value, now) {
    const rows = await this.query(
      'INSERT INTO ' + this.opts.table + ' (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value ' +
        "WHERE (CASE WHEN json_valid(value) THEN json_extract(value, '$.expires') END) < ? RETURNING key",
      key,
      value,
      now,
    );
    return rows.length > 0;
  }
}

const onDisk = workerData.path !== ':memory:';
const stores = new Map();

// Checkpoints (copying the WAL into the database file) run here, not inside commits. Done inside a
// commit, as SQLite does by default, a checkpoint held up that namespace's queries for tens of
// milliseconds every few hundred messages. A PASSIVE checkpoint on a connection of its own copies
// most of the WAL while writes go on; but the WAL only starts over when it is wholly copied with no
// write in between, which under steady writes never happens. So once the WAL is long, writes are
// held back for the moment it takes to copy the rest (a few milliseconds), and it starts over.
let checkpointer;
let writesSinceCheckpoint = 0;
let checkpointing;
let writesInFlight = 0;
let writesHeld; // a promise while writes wait for a checkpoint
let drained; // resolves when writesInFlight reaches 0
let closing = false;
const timers = [];
const ready = (async () => {
  for (const ns of workerData.namespaces) {
    const s = new SqliteStore({ uri: 'sqlite://' + workerData.path, busyTimeout: 10000, iterationLimit: 500 });
    s.namespace = ns; // clear() deletes only this namespace's rows
    s.on('error', () => undefined); // reported through the calls that fail
    if (onDisk) {
      await s.query('PRAGMA journal_mode=WAL');
      await s.query('PRAGMA synchronous=NORMAL');
      await s.query('PRAGMA wal_autocheckpoint=0');
    }
    await s.query('SELECT 1');
    stores.set(ns, s);
  }
  if (onDisk) {
    checkpointer = new SqliteStore({ uri: 'sqlite://' + workerData.path, busyTimeout: 10000 });
    checkpointer.on('error', () => undefined);
    await checkpointer.query('PRAGMA journal_size_limit=' + 64 * 1024 * 1024);
    timers.push(setInterval(() => void checkpoint(false), workerData.checkpointMs));
    timers.push(setInterval(() => void sweep(), workerData.sweepMs));
    for (const t of timers) t.unref();
    sweeping = sweep();
  }
})();

function logged(what) {
  return (err) => parentPort.postMessage({ type: 'log', message: what + ' failed: ' + (err && err.message) });
}

/** final: at close, copy everything and empty the WAL file. */
function checkpoint(final) {
  if (!checkpointer) return Promise.resolve();
  if (checkpointing) return checkpointing.then(() => (final ? checkpoint(true) : undefined));
  if (writesSinceCheckpoint === 0 && !final) return Promise.resolve();
  writesSinceCheckpoint = 0;
  checkpointing = (async () => {
    const [passive] = await checkpointer.query('PRAGMA wal_checkpoint(PASSIVE)');
    if (!final && !(passive && passive.log >= workerData.restartFrames)) return;
    let release;
    writesHeld = new Promise((r) => (release = r));
    try {
      if (writesInFlight > 0) await new Promise((r) => (drained = r));
      await checkpointer.query(final ? 'PRAGMA wal_checkpoint(TRUNCATE)' : 'PRAGMA wal_checkpoint(RESTART)');
    } finally {
      writesHeld = undefined;
      release();
    }
  })()
    .catch(logged('checkpoint'))
    .finally(() => (checkpointing = undefined));
  return checkpointing;
}

// keyv deletes an expired entry only when it is read again; dedupe ids and used tokens never are.
// Expired rows go in small batches, so no single delete holds the write lock for long.
let sweeping;
async function sweep() {
  if (closing) return;
  const sql =
    'DELETE FROM keyv WHERE rowid IN (SELECT rowid FROM keyv WHERE ' +
    "(CASE WHEN json_valid(value) THEN json_extract(value, '$.expires') END) < ? LIMIT 500) RETURNING 1";
  try {
    for (;;) {
      const rows = await checkpointer.query(sql, Date.now());
      if (rows.length < 500 || closing) break;
    }
  } catch (err) {
    logged('sweeping expired entries')(err);
  }
}

const READS = new Set(['get', 'has']);
const WRITES = new Set(['set', 'delete', 'clear', 'claim']);

async function handle(m) {
  await ready;
  if (closing) throw new Error('the store is closed');
  const s = stores.get(m.ns);
  if (!s) throw new Error('unknown namespace ' + m.ns);
  if (m.method === 'list') {
    const out = [];
    for await (const entry of s.iterator(m.args[0])) out.push(entry);
    return out;
  }
  if (READS.has(m.method)) return s[m.method](...m.args);
  if (!WRITES.has(m.method)) throw new Error('unsupported store call ' + m.method);
  while (writesHeld) await writesHeld;
  writesInFlight++;
  writesSinceCheckpoint++;
  try {
    return await s[m.method](...m.args);
  } finally {
    if (--writesInFlight === 0 && drained) {
      drained();
      drained = undefined;
    }
  }
}

parentPort.on('message', (m) => {
  if (m.type === 'close') {
    // Everything into the database file, and the WAL emptied, before the connections go. Then
    // the worker ends on its own, once sqlite3 has nothing in flight: terminating it with a query
    // in flight aborts the whole process (a fatal N-API error).
    closing = true;
    for (const t of timers) clearInterval(t);
    void ready
      .catch(() => undefined)
      .then(() => sweeping)
      .then(() => checkpoint(true))
      .then(() => Promise.allSettled([...stores.values(), ...(checkpointer ? [checkpointer] : [])].map((s) => s.disconnect())))
      .then(() => parentPort.close());
    return;
  }
  handle(m).then(
    (result) => parentPort.postMessage({ type: 'result', id: m.id, result }),
    (err) => parentPort.postMessage({ type: 'result', id: m.id, error: String(err && err.message ? err.message : err), code: err && err.code }),
  );
});
ready.then(
  () => parentPort.postMessage({ type: 'ready' }),
  (err) => parentPort.postMessage({ type: 'failed', error: String(err && err.message ? err.message : err) }),
);
`;

type Reply =
  | { type: 'ready' }
  | { type: 'log'; message: string }
  | { type: 'failed'; error: string }
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
      keyvSqlite: require.resolve('@keyv/sqlite'),
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
      else if (m.type === 'failed') reject(new Error(m.error));
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
      // The worker exits by itself once its connections are closed. Terminating it earlier, with
      // a sqlite3 query in flight, would abort the process: only a stuck disk gets that far.
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
  async *iterator(namespace?: string): AsyncGenerator<[string, unknown], void> {
    const entries = (await this.call(this.ns, 'list', [namespace])) as Array<[string, unknown]>;
    yield* entries;
  }
}
