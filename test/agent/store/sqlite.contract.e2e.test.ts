/** The contract suite on a SQLite file store in a temp dir (see ./contract.ts). */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';
import type { Store } from '../../../agent/store/types.js';
import { describeStoreContract } from './contract.js';
import { describeSpendContract } from './spend-contract.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const paths = new WeakMap<Store, string>();
// No background checkpoint: the WAL only grows, so its size is what the store wrote.
const open = async () => {
  const path = join(dir, `s${++n}.sqlite`);
  const store = await openSqliteStore({ path, log: () => undefined, checkpointMs: 3_600_000 });
  paths.set(store, path);
  return store;
};

describeStoreContract('sqlite', open, {
  bytesWritten: async (store) => statSync(`${paths.get(store)}-wal`).size,
  openInOtherProcess: async () => {
    const store = await open();
    return { store, factory: { engine: 'sqlite', path: paths.get(store)! } };
  },
});

// The sweep runs when a store opens: reopening the file on the clock sweeps it.
describeSpendContract('sqlite', {
  open: async (now) => {
    const path = join(dir, `s${++n}.sqlite`);
    const store = await openSqliteStore({ path, log: () => undefined, now });
    paths.set(store, path);
    return store;
  },
  sweep: async (store, now) => {
    const path = paths.get(store)!;
    await store.close();
    const reopened = await openSqliteStore({ path, log: () => undefined, now });
    paths.set(reopened, path);
    return reopened;
  },
});
