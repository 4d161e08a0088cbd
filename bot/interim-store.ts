/**
 * Interim, until the approvals, allowlists, memory, reminders, MCP and router state leave the keyv
 * namespaces (branch agent-approvals) so `openStorage` goes: the repositories the runner uses are
 * opened with `openStore`, on SQLite in their own file beside the keyv one (`<store>.repos`), so the
 * engine's one-time import of the keyv table never runs under the keyv namespaces still in use.
 * At that merge every caller opens `openStore(config.store, ...)` itself and this file goes.
 */
import type { Store } from '../agent/store/types.js';
import type { StoreSettings } from './env.js';
import { openStore } from './storage.js';

export function openInterimStore(settings: StoreSettings, log?: (msg: string) => void, opts: { mustExist?: boolean } = {}): Promise<Store> {
  const own: StoreSettings =
    settings.kind === 'sqlite' && settings.path !== ':memory:' ? { kind: 'sqlite', path: `${settings.path}.repos`, url: `sqlite://${settings.path}.repos` } : settings;
  return openStore(own, { ...opts, ...(log ? { log } : {}) });
}
