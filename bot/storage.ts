/**
 * Opens the keyv namespaces Gatehouse keeps (agent/kv.ts) on the configured store.
 * SQLite (the default) is embedded: one file, one connection per namespace, with a busy timeout so
 * namespaces writing at once wait instead of failing. `redis://` and `postgres://` load the matching
 * keyv adapter, which is how several instances share state; it must be installed separately.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Keyv, { type KeyvOptions } from 'keyv';
import KeyvSqlite from '@keyv/sqlite';
import type { AgentStores } from '../agent/kv.js';
import type { StoreSettings } from './env.js';

/**
 * Values are plain JSON (no Buffers, no Dates): keyv's default serializer walks every value looking
 * for those, and was a quarter of the CPU of a turn in the agent-core benchmark.
 */
const PLAIN_JSON: Pick<KeyvOptions, 'serialize' | 'deserialize'> = {
  serialize: (data) => JSON.stringify(data),
  deserialize: <V>(text: string) => JSON.parse(text) as { value?: V; expires?: number },
};

/**
 * @keyv/sqlite with a one-query delete. Its own delete reads the row, then deletes it: two trips
 * through sqlite3's thread pool, and a delete happens for every chat message (its queued turn).
 */
class SqliteStore extends KeyvSqlite {
  override async delete(key: string): Promise<boolean> {
    const rows = (await this.query(`DELETE FROM ${this.opts.table} WHERE key = ? RETURNING key`, key)) as unknown[];
    return rows.length > 0;
  }
}

export const NAMESPACES = ['transcripts', 'runs', 'approvals', 'allowlists', 'dedupe'] as const;

export interface Storage extends AgentStores {
  close(): Promise<void>;
}

export async function openStorage(settings: StoreSettings, log: (msg: string) => void = (m) => console.error(m)): Promise<Storage> {
  const instances: Keyv[] = [];
  const open = async (namespace: string): Promise<Keyv> => {
    let kv: Keyv;
    if (settings.kind === 'sqlite') {
      if (settings.path !== ':memory:') mkdirSync(dirname(settings.path), { recursive: true });
      // iterationLimit: the runner lists the runs namespace at start-up, a page per query.
      const sqlite = new SqliteStore({ uri: `sqlite://${settings.path}`, busyTimeout: 10_000, iterationLimit: 500 });
      // WAL + synchronous=NORMAL: a committed write survives a process crash, and writes do not
      // fsync one by one (thousands of turns a second instead of dozens).
      if (settings.path !== ':memory:') {
        await sqlite.query('PRAGMA journal_mode=WAL');
        await sqlite.query('PRAGMA synchronous=NORMAL');
      }
      kv = new Keyv({ store: sqlite, namespace, ...PLAIN_JSON });
    } else {
      const pkg = settings.kind === 'redis' ? '@keyv/redis' : '@keyv/postgres';
      let mod: { default: new (url: string) => unknown };
      try {
        mod = (await import(pkg)) as { default: new (url: string) => unknown };
      } catch {
        throw new Error(`GATEHOUSE_STORE is a ${settings.kind} URL, but ${pkg} is not installed: run \`npm install ${pkg}\`.`);
      }
      kv = new Keyv({ store: new mod.default(settings.url) as never, namespace, ...PLAIN_JSON });
    }
    kv.on('error', (err: unknown) => log(`[store] ${namespace}: ${(err as Error).message}`));
    instances.push(kv);
    return kv;
  };
  const stores = {
    transcripts: await open('transcripts'),
    runs: await open('runs'),
    approvals: await open('approvals'),
    allowlists: await open('allowlists'),
    dedupe: await open('dedupe'),
  };
  // Fail now, not on the first message, if the store cannot be used.
  try {
    await stores.dedupe.set('startup-check', Date.now(), 60_000);
  } catch (err) {
    throw new Error(`cannot open the store (${settings.url}): ${(err as Error).message}`);
  }
  return {
    ...stores,
    async close() {
      await Promise.all(instances.map((k) => k.disconnect().catch(() => undefined)));
    },
  };
}

/** In-memory namespaces (tests and benchmarks that do not measure storage). */
export function memoryStorage(): Storage {
  const mk = () => new Keyv();
  return {
    transcripts: mk(),
    runs: mk(),
    approvals: mk(),
    allowlists: mk(),
    dedupe: mk(),
    async close() {},
  };
}
