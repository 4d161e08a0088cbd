/**
 * The one place bot/ opens a store: `openStore(settings, opts)` dispatches on GATEHOUSE_STORE's kind
 * to an engine (agent/store/sqlite, agent/store/postgres) and returns the repositories
 * (agent/store/types.ts). The engines own their files, permissions, locks and migrations.
 *
 * Contract:
 * - `exclusive` (gatehouse serve/start): one such process per SQLite store; a second fails with a
 *   StoreError "already running (pid N, since ...)" before it has changed anything. PostgreSQL
 *   ignores it (replicas share a server).
 * - `mustExist` (operator commands): never creates a store; the error names the path, GATEHOUSE_STORE
 *   and the folder to run from.
 * - Errors never hold a password (`settings.description` is what is printed).
 *
 * Interim (until the agent-repos change moves every caller onto `Store`): `openStorage` still opens
 * the keyv namespaces of the old build (bot/sqlite-worker.ts) on SQLite, with `exclusive` taking the
 * same lock as openStore. It goes, with bot/sqlite-worker.ts, when nothing calls it.
 */
import type { Store } from '../agent/store/types.js';
import { openSqliteStore } from '../agent/store/sqlite/index.js';
import { createPrivate, narrowStoreFiles, narrowStorePermissions, PERMISSION_CODES, storeProblem } from '../agent/store/sqlite/files.js';
import { takeStoreLock, type StoreLock } from '../agent/store/sqlite/lock.js';
import { dirname } from 'node:path';
import Keyv, { type KeyvOptions } from 'keyv';
import type { AgentStores, KV } from '../agent/kv.js';
import { kvReminderBackend, type ReminderBackend } from '../agent/reminders.js';
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
  /** Reminders, with their compare-and-set claim (agent/reminders.ts). */
  reminders: ReminderBackend;
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

export interface OpenStoreOptions {
  exclusive?: boolean;
  mustExist?: boolean;
  log?: (msg: string) => void;
}

interface PostgresEngine {
  openPostgresStore(opts: { url: string; log?: (msg: string) => void }): Promise<Store>;
}

export async function openStore(settings: StoreSettings, opts: OpenStoreOptions = {}): Promise<Store> {
  const log = opts.log ?? ((m: string) => console.error(m));
  if (settings.kind === 'postgres') {
    // Loaded only when configured, so SQLite users never load pg. (A variable: the engine arrives
    // from its own branch; make this a plain import once both are merged.)
    const engine = '../agent/store/postgres/index.js';
    const { openPostgresStore } = (await import(engine)) as PostgresEngine;
    return openPostgresStore({ url: settings.url, log });
  }
  return openSqliteStore({ path: settings.path, exclusive: opts.exclusive ?? false, mustExist: opts.mustExist ?? false, log });
}

export async function openStorage(settings: StoreSettings, log: (msg: string) => void = (m) => console.error(m), opts: { exclusive?: boolean } = {}): Promise<Storage> {
  if (settings.kind !== 'sqlite') throw new Error(`cannot open the store (${settings.description}): this build still runs on the SQLite keyv store only`);
  const fail = (why: string) => new Error(`cannot open the store (${settings.url}): ${why}`);
  if (settings.path !== ':memory:') {
    const problem = storeProblem(settings.path);
    if (problem) throw fail(problem);
  }
  if (settings.path !== ':memory:') {
    // Before SQLite: a file it creates would be 0644, and the WAL and SHM copy the main file's mode.
    try {
      createPrivate(settings.path);
    } catch (err) {
      throw fail((err as Error).message);
    }
    narrowStorePermissions(settings.path, (m) => log(`[store] ${m}`));
  }
  // Before anything else of the store: a second serve must change nothing.
  const lock: StoreLock | undefined = opts.exclusive && settings.path !== ':memory:' ? await takeStoreLock(settings.path, (m) => log(`[store] ${m}`)) : undefined;
  let worker;
  try {
    worker = await startSqliteWorker(settings.path, NAMESPACES, { log: (m) => log(`[store] ${m}`) });
  } catch (err) {
    await lock?.release();
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
  const remindersKv = open('reminders');
  const remindersStore = worker.store('reminders');
  const reminders: ReminderBackend = {
    kv: remindersKv,
    // Keyv's own format (PLAIN_JSON, no expiry), so keyv reads the entry back like any other.
    swap: (id, expectedRev, next) => remindersStore.setIfRev(`reminders:r:${id}`, JSON.stringify({ value: next }), expectedRev),
  };
  // Fail now, not on the first message, if the store cannot be written.
  try {
    await stores.dedupe.set('startup-check', Date.now(), 60_000);
    // The WAL and SHM exist now: made by this SQLite they are 0600 already; left by another, narrowed.
    if (settings.path !== ':memory:') narrowStoreFiles(settings.path, (m) => log(`[store] ${m}`));
  } catch (err) {
    await worker.close().catch(() => undefined);
    await lock?.release();
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
      await lock?.release();
    },
  };
}

export { STORE_SIDE_FILES } from '../agent/store/sqlite/files.js';

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
    reminders: kvReminderBackend(mk()),
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
