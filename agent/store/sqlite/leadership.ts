/**
 * Leadership on SQLite (see Leadership in ../types.ts): one process per store file (the lock of
 * ./lock.ts), so that process always leads; nothing to elect, `onChange` never fires.
 */
import type { Leadership } from '../types.js';

export function soleLeadership(role: string): Leadership {
  return {
    role,
    leading: true,
    onChange: () => () => undefined,
    start: async () => undefined,
    release: async () => undefined,
  };
}
