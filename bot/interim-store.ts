/**
 * Interim, until the approvals, allowlists, memory, reminders, MCP and router state leave the keyv
 * namespaces (branch agent-approvals) and `openStorage` goes: the repositories are opened with
 * `openStore` on the same store, BEFORE `openStorage`, so the engine's one-time import of a keyv
 * build's table (which drops it) runs before the keyv namespaces open their fresh table beside the
 * new ones. Then everything is in one file (one backup, one lock). At that merge every caller opens
 * `openStore(config.store, ...)` itself and this file goes.
 */
import type { Store } from '../agent/store/types.js';
import type { StoreSettings } from './env.js';
import { openStore } from './storage.js';

export function openInterimStore(settings: StoreSettings, log?: (msg: string) => void, opts: { mustExist?: boolean; exclusive?: boolean } = {}): Promise<Store> {
  return openStore(settings, { ...opts, ...(log ? { log } : {}) });
}
