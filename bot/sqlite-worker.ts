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
 *   `new Keyv({ store, namespace })`. Keys arrive with keyv's namespace prefix, exactly as
 *   @keyv/sqlite would store them in-process, so the file format is @keyv/sqlite's.
 * - Every call resolves after SQLite finished it; a failure rejects with SQLite's error.
 *   After the worker has gone (close(), or a crash) every call rejects; nothing is dropped quietly.
 * - The worker holds the process open only while calls are pending.
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

// One query instead of @keyv/sqlite's read-then-delete.
class SqliteStore extends KeyvSqlite {
  async delete(key) {
    const rows = await this.query('DELETE FROM ' + this.opts.table + ' WHERE key = ? RETURNING key', key);
    return rows.length > 0;
  }
}

const stores = new Map();
const ready = (async () => {
  for (const ns of workerData.namespaces) {
    const s = new SqliteStore({ uri: 'sqlite://' + workerData.path, busyTimeout: 10000, iterationLimit: 500 });
    s.namespace = ns; // clear() deletes only this namespace's rows
    s.on('error', () => undefined); // reported through the calls that fail
    if (workerData.path !== ':memory:') {
      await s.query('PRAGMA journal_mode=WAL');
      await s.query('PRAGMA synchronous=NORMAL');
    }
    await s.query('SELECT 1');
    stores.set(ns, s);
  }
})();

const METHODS = new Set(['get', 'set', 'delete', 'has', 'clear']);

async function handle(m) {
  await ready;
  const s = stores.get(m.ns);
  if (!s) throw new Error('unknown namespace ' + m.ns);
  if (m.method === 'list') {
    const out = [];
    for await (const entry of s.iterator(m.args[0])) out.push(entry);
    return out;
  }
  if (!METHODS.has(m.method)) throw new Error('unsupported store call ' + m.method);
  return s[m.method](...m.args);
}

parentPort.on('message', (m) => {
  if (m.type === 'close') {
    void Promise.allSettled([...stores.values()].map((s) => s.disconnect())).then(() => parentPort.postMessage({ type: 'closed' }));
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
  | { type: 'ready' | 'closed' }
  | { type: 'failed'; error: string }
  | { type: 'result'; id: number; result?: unknown; error?: string; code?: unknown };

export interface SqliteWorker {
  store(namespace: string): WorkerStore;
  close(): Promise<void>;
}

export async function startSqliteWorker(path: string, namespaces: readonly string[]): Promise<SqliteWorker> {
  const require = createRequire(import.meta.url);
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { path, namespaces: [...namespaces], keyvSqlite: require.resolve('@keyv/sqlite') },
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  let gone: Error | undefined;
  let onClosed: (() => void) | undefined;

  const settleAll = (err: Error) => {
    gone ??= err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  worker.on('message', (m: Reply) => {
    if (m.type === 'closed') return onClosed?.();
    if (m.type !== 'result') return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (pending.size === 0) worker.unref();
    if (m.error === undefined) p.resolve(m.result);
    else p.reject(Object.assign(new Error(m.error), m.code !== undefined ? { code: m.code } : {}));
  });
  worker.on('error', (err) => settleAll(new Error(`the store's worker failed: ${err.message}`)));
  worker.on('exit', (code) => settleAll(new Error(`the store's worker has stopped (exit code ${code})`)));

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
      const closed = new Promise<void>((r) => (onClosed = r));
      worker.ref();
      worker.postMessage({ type: 'close' });
      await Promise.race([closed, new Promise((r) => setTimeout(r, 5000).unref())]);
      settleAll(new Error("the store is closed"));
      await worker.terminate();
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
  async *iterator(namespace?: string): AsyncGenerator<[string, unknown], void> {
    const entries = (await this.call(this.ns, 'list', [namespace])) as Array<[string, unknown]>;
    yield* entries;
  }
}
