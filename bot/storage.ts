/**
 * Opens the keyv namespaces Gatehouse keeps (agent/kv.ts) on the configured store.
 * SQLite (the default) is embedded: one file, @keyv/sqlite in a worker thread (bot/sqlite-worker.ts)
 * with one connection per namespace. `redis://` and `postgres://` load the matching keyv adapter,
 * which is how several instances share state; it must be installed separately.
 *
 * Every namespace throws on a store failure (keyv's default would log it and carry on: a turn
 * "stored" that never was, a transcript read that failed looking like a new conversation).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Keyv, { type KeyvOptions } from 'keyv';
import type { AgentStores } from '../agent/kv.js';
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

export const NAMESPACES = ['transcripts', 'runs', 'approvals', 'allowlists', 'dedupe'] as const;
type Namespace = (typeof NAMESPACES)[number];

export interface Storage extends AgentStores {
  /**
   * Records a platform event id for `ttlMs`; true the first time, false while it is recorded
   * (a platform retry, a redelivery after a restart). One atomic statement on SQLite; on other
   * stores a read then a write.
   */
  claimEvent(id: string, ttlMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** Read-then-write claim on any keyv namespace (not atomic across processes). */
function claimByReadThenWrite(kv: Keyv): Storage['claimEvent'] {
  return async (id, ttlMs) => {
    if ((await kv.get(id)) !== undefined) return false;
    await kv.set(id, 1, ttlMs);
    return true;
  };
}

export async function openStorage(settings: StoreSettings, log: (msg: string) => void = (m) => console.error(m)): Promise<Storage> {
  const instances: Keyv[] = [];
  const closers: Array<() => Promise<void>> = [];
  const wrap = (namespace: Namespace, store: unknown): Keyv => {
    const kv = new Keyv({ store, namespace, throwOnErrors: true, ...PLAIN_JSON });
    kv.on('error', (err: unknown) => log(`[store] ${namespace}: ${(err as Error).message ?? String(err)}`));
    instances.push(kv);
    return kv;
  };
  let open: (namespace: Namespace) => Keyv;
  let claimEvent: Storage['claimEvent'] | undefined;
  if (settings.kind === 'sqlite') {
    if (settings.path !== ':memory:') mkdirSync(dirname(settings.path), { recursive: true });
    let worker;
    try {
      worker = await startSqliteWorker(settings.path, NAMESPACES, { log: (m) => log(`[store] ${m}`) });
    } catch (err) {
      throw new Error(`cannot open the store (${settings.url}): ${(err as Error).message}`);
    }
    closers.push(() => worker.close());
    open = (namespace) => wrap(namespace, worker.store(namespace));
    const dedupeStore = worker.store('dedupe');
    // keyv's own format, so keyv reads these entries like any other: key `dedupe:<id>`, value
    // {"value":1,"expires":<ms>} (PLAIN_JSON), expiry honoured by the claim and by the sweep.
    claimEvent = (id, ttlMs) => {
      const now = Date.now();
      return dedupeStore.claim(`dedupe:${id}`, JSON.stringify({ value: 1, expires: now + ttlMs }), now);
    };
  } else {
    const pkg = settings.kind === 'redis' ? '@keyv/redis' : '@keyv/postgres';
    let mod: { default: new (url: string) => unknown };
    try {
      mod = (await import(pkg)) as { default: new (url: string) => unknown };
    } catch {
      throw new Error(`GATEHOUSE_STORE is a ${settings.kind} URL, but ${pkg} is not installed: run \`npm install ${pkg}\`.`);
    }
    open = (namespace) => wrap(namespace, new mod.default(settings.url));
    closers.push(() => Promise.all(instances.map((k) => k.disconnect().catch(() => undefined))).then(() => undefined));
  }
  const stores = {
    transcripts: open('transcripts'),
    runs: open('runs'),
    approvals: open('approvals'),
    allowlists: open('allowlists'),
    dedupe: open('dedupe'),
  };
  // Fail now, not on the first message, if the store cannot be used.
  try {
    await stores.dedupe.set('startup-check', Date.now(), 60_000);
  } catch (err) {
    await Promise.all(closers.map((c) => c().catch(() => undefined)));
    throw new Error(`cannot open the store (${settings.url}): ${(err as Error).message}`);
  }
  let closed = false;
  return {
    ...stores,
    claimEvent: claimEvent ?? claimByReadThenWrite(stores.dedupe),
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all(closers.map((c) => c()));
    },
  };
}

/** In-memory namespaces (tests and benchmarks that do not measure storage). */
export function memoryStorage(): Storage {
  const mk = () => new Keyv({ throwOnErrors: true });
  const dedupe = mk();
  return {
    transcripts: mk(),
    runs: mk(),
    approvals: mk(),
    allowlists: mk(),
    dedupe,
    claimEvent: claimByReadThenWrite(dedupe),
    async close() {},
  };
}
