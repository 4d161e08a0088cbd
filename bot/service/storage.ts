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
 * - A SQLite start never loads `pg` (see openStore).
 */
import type { Store } from '../../agent/store/types.js';
import { openSqliteStore } from '../../agent/store/sqlite/index.js';
import type { StoreSettings } from '../config/env.js';
import { fallbackLog, type Log } from '../../agent/log.js';

export interface OpenStoreOptions {
  exclusive?: boolean;
  mustExist?: boolean;
  log?: Log;
}

export async function openStore(settings: StoreSettings, opts: OpenStoreOptions = {}): Promise<Store> {
  const log = opts.log ?? fallbackLog;
  if (settings.kind === 'postgres') {
    // Loaded only when configured: a static import made importing this module 125 ms slower
    // (median of 12 `node -e` runs of the build; pg alone 90-230 ms), paid by every SQLite start
    // (the default) for nothing. A literal path, so tsc still checks it.
    const { openPostgresStore } = await import('../../agent/store/postgres/index.js');
    return openPostgresStore({ url: settings.url, log });
  }
  return openSqliteStore({ path: settings.path, exclusive: opts.exclusive ?? false, mustExist: opts.mustExist ?? false, log });
}
