/**
 * Interim, until bot/storage.ts's `openStore` (branch store-sqlite) opens the Store itself: the
 * repositories the runner uses, in their own SQLite file beside the keyv store, so the two never
 * touch one file. Removed at the merge.
 */
import { openSqliteStore } from '../agent/store/sqlite/index.js';
import type { Store } from '../agent/store/types.js';
import type { StoreSettings } from './env.js';

export function openInterimStore(settings: StoreSettings, log?: (msg: string) => void, opts: { mustExist?: boolean } = {}): Promise<Store> {
  return openSqliteStore({ path: settings.path === ':memory:' ? ':memory:' : `${settings.path}.repos`, ...(log ? { log } : {}), ...opts });
}
