/**
 * The contract suite (./contract.ts) on the PostgreSQL engine: every store on a fresh database of
 * the test server (test/helpers/postgres.ts), the races across real processes included. Bytes
 * written are the WAL records that touch the store's own database (pg_walinspect), so other test
 * files writing to the same server do not count.
 */
import { currentWalLsn, databaseWalBytesSince, openPostgresStore, type PostgresStore } from '../../../agent/store/postgres/index.js';
import type { Store } from '../../../agent/store/types.js';
import { testPostgresUrl } from '../../helpers/postgres.js';
import { describeStoreContract } from './contract.js';
import { describeSpendContract } from './spend-contract.js';

// The first test of the file may wait for the server to start.
beforeAll(async () => {
  await testPostgresUrl();
}, 200_000);

const opened = new WeakMap<Store, { url: string; lsn: string }>();
const open = async () => {
  const url = await testPostgresUrl();
  const store = await openPostgresStore({ url, log: () => undefined });
  opened.set(store, { url, lsn: await currentWalLsn(url) });
  return store;
};

describeStoreContract('postgres', open, {
  bytesWritten: async (store) => {
    const o = opened.get(store)!;
    return databaseWalBytesSince(o.url, o.lsn);
  },
  openInOtherProcess: async () => {
    const url = await testPostgresUrl();
    const store = await openPostgresStore({ url, log: () => undefined });
    return { store, factory: { engine: 'postgres', url } };
  },
});

describeSpendContract('postgres', {
  open: async (now) => openPostgresStore({ url: await testPostgresUrl(), log: () => undefined, now }),
  sweep: async (store) => {
    await (store as PostgresStore).sweep();
    return store;
  },
});
