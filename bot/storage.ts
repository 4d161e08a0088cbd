/**
 * Opens the keyv namespaces Gatehouse keeps (agent/kv.ts) on the configured store: a SQLite file,
 * embedded, driven by better-sqlite3 in a worker thread (bot/sqlite-worker.ts). It is the only
 * store for now; bot/env.ts turns any other GATEHOUSE_STORE into a config error.
 *
 * Every namespace throws on a store failure (keyv's default would log it and carry on: a turn
 * "stored" that never was, a transcript read that failed looking like a new conversation).
 * A store folder or file this process may not write fails at start, naming it as a permission problem.
 *
 * Contract (privacy): transcripts are readable by this user only. The store file is created 0600
 * before SQLite opens it (SQLite gives its -wal and -shm the main file's mode), and at every start
 * the file, -wal, -shm and -journal are chmodded 0600 (stores made by older versions were 0644).
 * A store folder Gatehouse creates is 0700; an existing one is narrowed to 0700 when it is the
 * store's own (ours, not sticky, nothing in it but the store's and Gatehouse's own data files), else
 * it is left as it is (it may hold a workspace the sandbox user must enter) and a warning names it.
 */
import { accessSync, chmodSync, closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import Keyv, { type KeyvOptions } from 'keyv';
import type { AgentStores, KV } from '../agent/kv.js';
import type { StoreSettings } from './env.js';
import { startSqliteWorker } from './sqlite-worker.js';

/**
 * Values are plain JSON (no Buffers, no Dates): keyv's default serializer walks every value looking
 * for those, and was a quarter of the CPU of a turn in the agent-core benchmark.
 */
const PLAIN_JSON: Pick<KeyvOptions, 'serialize' | 'deserialize'> = {
  serialize: (data) => JSON.stringify(data),
  deserialize: <V>(text: string) => JSON.parse(text) as { value?: V; expires?: number },
};

export const NAMESPACES = ['transcripts', 'runs', 'approvals', 'allowlists', 'dedupe', 'mcp', 'memory', 'reminders'] as const;
type Namespace = (typeof NAMESPACES)[number];

export interface Storage extends AgentStores {
  /** The last successful tool listing of each MCP server, per agent (agent/mcp/manager.ts). */
  mcp: KV;
  /**
   * Records a platform event id for `ttlMs`; true the first time, false while it is recorded
   * (a platform retry, a redelivery after a restart). One atomic statement on SQLite, so two
   * processes sharing the file never both win; the approval broker claims first clicks with it.
   */
  claimEvent(id: string, ttlMs: number): Promise<boolean>;
  /**
   * Compare-and-set in the `approvals` namespace: writes `value` at `key` only if the stored entry
   * is live and has no `decision` yet; true when it wrote. One atomic statement on SQLite, so of
   * several processes sharing the file exactly one records an approval's decision (first click wins).
   */
  decideOnce(key: string, value: unknown, ttlMs: number): Promise<boolean>;
  /** The agent's memory notes (agent/memory.ts). */
  memory: KV;
  /** Reminders: read by the upgrade to the repository store only (agent/reminders.ts uses ReminderRepo). */
  reminders: KV;
  close(): Promise<void>;
}

/** Read-then-write claim for the in-memory store (one process, nothing to race with). */
function claimByReadThenWrite(kv: Keyv): Storage['claimEvent'] {
  return async (id, ttlMs) => {
    if ((await kv.get(id)) !== undefined) return false;
    await kv.set(id, 1, ttlMs);
    return true;
  };
}

const PERMISSION_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'SQLITE_READONLY', 'SQLITE_PERM', 'SQLITE_READONLY_DIRECTORY']);

/** Says which folder or file is in the way, and whether it is a permission problem. */
function storeProblem(path: string): string | undefined {
  const folder = dirname(path);
  const who = typeof process.getuid === 'function' ? ` (user id ${process.getuid()})` : '';
  const fix = 'make it writable for the user Gatehouse runs as, or point GATEHOUSE_STORE at a writable folder';
  if (!existsSync(folder)) {
    // Node's recursive mkdir reports a read-only parent as ENOENT: look at the parent ourselves.
    let parent = dirname(folder);
    while (!existsSync(parent) && dirname(parent) !== parent) parent = dirname(parent);
    if (!statSync(parent).isDirectory()) {
      return `the store folder ${folder} cannot be created: part of that path (${parent}) is a file, not a folder`;
    }
    try {
      accessSync(parent, constants.W_OK | constants.X_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return `permission problem: cannot create the store folder ${folder}: ${parent} is not writable${who} (${code}); ${fix}`;
    }
    try {
      mkdirSync(folder, { recursive: true, mode: 0o700 });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (PERMISSION_CODES.has(code)) return `permission problem: cannot create the store folder ${folder}${who} (${code}); ${fix}`;
      return `cannot create the store folder ${folder}: ${(err as Error).message}`;
    }
  } else if (!statSync(folder).isDirectory()) {
    return `the store folder ${folder} is a file, not a folder`;
  }
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch (err) {
    return `permission problem: the store folder ${folder} is not writable${who} (${(err as NodeJS.ErrnoException).code}); ${fix}`;
  }
  if (existsSync(path)) {
    try {
      accessSync(path, constants.R_OK | constants.W_OK);
    } catch (err) {
      return `permission problem: the store file ${path} is not writable${who} (${(err as NodeJS.ErrnoException).code}); ${fix}`;
    }
  }
  return undefined;
}

export async function openStorage(settings: StoreSettings, log: (msg: string) => void = (m) => console.error(m)): Promise<Storage> {
  const fail = (why: string) => new Error(`cannot open the store (${settings.url}): ${why}`);
  if (settings.path !== ':memory:') {
    const problem = storeProblem(settings.path);
    if (problem) throw fail(problem);
  }
  if (settings.path !== ':memory:') {
    // Before SQLite: a file it creates would be 0644, and the WAL and SHM copy the main file's mode.
    if (!existsSync(settings.path)) {
      try {
        closeSync(openSync(settings.path, 'wx', 0o600));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw fail((err as Error).message);
      }
    }
    narrowStorePermissions(settings.path, log);
  }
  let worker;
  try {
    worker = await startSqliteWorker(settings.path, NAMESPACES, { log: (m) => log(`[store] ${m}`) });
  } catch (err) {
    const code = String((err as { code?: unknown }).code ?? '');
    if (PERMISSION_CODES.has(code)) {
      throw fail(`permission problem in the store folder ${dirname(settings.path)}: ${(err as Error).message} (${code})`);
    }
    throw fail((err as Error).message);
  }
  const instances: Keyv[] = [];
  const open = (namespace: Namespace): Keyv => {
    const kv = new Keyv({ store: worker.store(namespace), namespace, throwOnErrors: true, ...PLAIN_JSON });
    kv.on('error', (err: unknown) => log(`[store] ${namespace}: ${(err as Error).message ?? String(err)}`));
    instances.push(kv);
    return kv;
  };
  const dedupeStore = worker.store('dedupe');
  // keyv's own format, so keyv reads these entries like any other: key `dedupe:<id>`, value
  // {"value":1,"expires":<ms>} (PLAIN_JSON), expiry honoured by the claim and by the sweep.
  const claimEvent: Storage['claimEvent'] = (id, ttlMs) => {
    const now = Date.now();
    return dedupeStore.claim(`dedupe:${id}`, JSON.stringify({ value: 1, expires: now + ttlMs }), now);
  };
  const approvalsStore = worker.store('approvals');
  const decideOnce: Storage['decideOnce'] = (key, value, ttlMs) => {
    const now = Date.now();
    return approvalsStore.setUndecided(`approvals:${key}`, JSON.stringify({ value, expires: now + ttlMs }), now);
  };
  const stores = {
    transcripts: open('transcripts'),
    runs: open('runs'),
    approvals: open('approvals'),
    allowlists: open('allowlists'),
    dedupe: open('dedupe'),
    mcp: open('mcp'),
  };
  const memory = open('memory');
  const reminders = open('reminders');
  // Fail now, not on the first message, if the store cannot be written.
  try {
    await stores.dedupe.set('startup-check', Date.now(), 60_000);
    // The WAL and SHM exist now: made by this SQLite they are 0600 already; left by another, narrowed.
    if (settings.path !== ':memory:') narrowStoreFiles(settings.path, log);
  } catch (err) {
    await worker.close().catch(() => undefined);
    const code = String((err as { code?: unknown }).code ?? '');
    throw fail(PERMISSION_CODES.has(code) ? `permission problem in the store folder ${dirname(settings.path)}: ${(err as Error).message} (${code})` : (err as Error).message);
  }
  let closed = false;
  return {
    ...stores,
    claimEvent,
    decideOnce,
    memory,
    reminders,
    async close() {
      if (closed) return;
      closed = true;
      await worker.close();
    },
  };
}

/** The files SQLite keeps beside the store. */
export const STORE_SIDE_FILES = ['', '-wal', '-shm', '-journal'] as const;

/** Every store file that exists, 0600 (only this user reads transcripts). */
function narrowStoreFiles(path: string, log: (msg: string) => void): void {
  for (const suffix of STORE_SIDE_FILES) {
    const file = path + suffix;
    let mode: number;
    try {
      mode = lstatSync(file).mode & 0o777;
    } catch {
      continue; // not there
    }
    if ((mode & 0o077) === 0) continue;
    try {
      chmodSync(file, 0o600);
    } catch (err) {
      log(`[store] warning: ${file} is readable by other users (mode ${mode.toString(8)}) and could not be made 0600: ${(err as Error).message}`);
    }
  }
}

/** What Gatehouse itself keeps in its data folder besides the store (bot/reload.ts, bot/headless/attach.ts). */
const DATA_FOLDER_FILES = new Set(['gatehouse.pid', 'gatehouse.reload.json', 'gatehouse.sock', 'gatehouse.token']);

/**
 * The store folder 0700 when it is the store's own: ours, not sticky, and holding nothing but the
 * store's files and Gatehouse's pid/socket files. Any other folder (the config's, which will hold a
 * workspace the sandbox user must enter; /tmp) keeps its mode, with a warning when others may list it.
 */
function narrowStorePermissions(path: string, log: (msg: string) => void): void {
  narrowStoreFiles(path, log);
  const folder = dirname(path);
  let st;
  try {
    st = statSync(folder);
  } catch {
    return;
  }
  const mode = st.mode & 0o7777;
  if ((mode & 0o077) === 0) return;
  const ours = typeof process.getuid !== 'function' || st.uid === process.getuid();
  const sticky = (mode & 0o1000) !== 0;
  const own = basename(path);
  let onlyOurs = false;
  try {
    onlyOurs = readdirSync(folder).every((name) => name.startsWith(own) || DATA_FOLDER_FILES.has(name));
  } catch {
    // unreadable: treat as shared
  }
  if (ours && !sticky && onlyOurs) {
    try {
      chmodSync(folder, mode & 0o700);
    } catch (err) {
      log(`[store] warning: could not make the store folder ${folder} 0700: ${(err as Error).message}`);
    }
    return;
  }
  if ((mode & 0o044) === 0) return; // others may pass through but not list: nothing to say
  log(
    `[store] warning: the store folder ${folder} is open to other users (mode ${mode.toString(8)}) and holds other things, so it was left as it is; ` +
      `the store files are 0600. Give the store a folder of its own (GATEHOUSE_STORE=sqlite://./data/gatehouse.sqlite).`,
  );
}

/** In-memory namespaces (tests and benchmarks that do not measure storage). */
export function memoryStorage(): Storage {
  const mk = () => new Keyv({ throwOnErrors: true });
  const dedupe = mk();
  const approvals = mk();
  return {
    transcripts: mk(),
    runs: mk(),
    approvals,
    allowlists: mk(),
    dedupe,
    mcp: mk(),
    memory: mk(),
    reminders: mk(),
    claimEvent: claimByReadThenWrite(dedupe),
    // One process: a read then a write cannot be raced by another.
    async decideOnce(key, value, ttlMs) {
      const stored: unknown = await approvals.get(key);
      if (typeof stored !== 'object' || stored === null || (stored as { decision?: unknown }).decision !== undefined) return false;
      await approvals.set(key, value, ttlMs);
      return true;
    },
    async close() {},
  };
}
