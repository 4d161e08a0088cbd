/**
 * The storage seam: the few keyv operations the agent uses. A `Keyv` instance (SQLite, Redis,
 * Postgres or in-memory) satisfies it; bot/storage.ts opens one per namespace.
 * Values are JSON-serializable; every value read back is validated by its owner (zod), since a
 * store shared by several instances or left from an older version is outside data.
 */
export interface KV {
  get(key: string): Promise<unknown>;
  /** ttlMs: the entry disappears after it (dedupe ids, expired tokens). */
  set(key: string, value: unknown, ttlMs?: number): Promise<unknown>;
  delete(key: string): Promise<unknown>;
  /**
   * Every live entry, as [key without the namespace, value]. Keyv provides it for SQLite, Redis,
   * Postgres and in-memory stores; the runner lists its namespace with it after a restart.
   */
  iterator?: (ignored?: unknown) => AsyncIterable<[string, unknown]>;
}

/** The namespaces Gatehouse keeps (DESIGN.md "Storage"). */
export interface AgentStores {
  transcripts: KV;
  runs: KV;
  approvals: KV;
  allowlists: KV;
  dedupe: KV;
}
