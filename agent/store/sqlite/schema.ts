/**
 * The SQLite schema, as numbered migrations; the version is `PRAGMA user_version`.
 *
 * Contract:
 * - MIGRATIONS[n - 1] takes a store from version n - 1 to n. A migration is a list of single
 *   statements run in ONE transaction with the version bump (statements added by a migration never
 *   change once released: a new change is a new migration).
 * - Version 0 with a `keyv` table is a store of the keyv build: migration 1 also imports it
 *   (./legacy.ts) in the same transaction and drops the table.
 * - Ordering columns: lists "in the order added" use the rowid (SQLite gives a new row a rowid above
 *   every existing one), "oldest first" uses created_at then rowid.
 */

const V1 = `
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE conversations(
  key TEXT PRIMARY KEY, agent TEXT NOT NULL, state TEXT NOT NULL, updated_at INTEGER NOT NULL,
  last_seq INTEGER NOT NULL DEFAULT 0, base_seq INTEGER NOT NULL DEFAULT 0, revision INTEGER NOT NULL);
CREATE INDEX conversations_agent_updated ON conversations(agent, updated_at);
CREATE INDEX conversations_updated ON conversations(updated_at);
CREATE TABLE messages(conversation TEXT NOT NULL, seq INTEGER NOT NULL, message TEXT NOT NULL, PRIMARY KEY(conversation, seq)) WITHOUT ROWID;
CREATE TABLE summaries(conversation TEXT NOT NULL, through_seq INTEGER NOT NULL, base TEXT NOT NULL, PRIMARY KEY(conversation, through_seq)) WITHOUT ROWID;
CREATE TABLE tool_results(conversation TEXT NOT NULL, id TEXT NOT NULL, content TEXT NOT NULL, PRIMARY KEY(conversation, id)) WITHOUT ROWID;
CREATE TABLE queued_turns(conversation TEXT NOT NULL, id TEXT NOT NULL, turn TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY(conversation, id));
CREATE TABLE run_records(conversation TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE approvals(
  id TEXT PRIMARY KEY, conversation TEXT NOT NULL, request TEXT NOT NULL, decision TEXT,
  created_at INTEGER NOT NULL, keep_until INTEGER NOT NULL);
CREATE INDEX approvals_pending ON approvals(conversation, created_at) WHERE decision IS NULL;
CREATE INDEX approvals_all_pending ON approvals(created_at) WHERE decision IS NULL;
CREATE INDEX approvals_keep ON approvals(keep_until);
CREATE TABLE approval_tokens(token TEXT PRIMARY KEY, request_id TEXT NOT NULL, choice TEXT NOT NULL);
CREATE INDEX approval_tokens_request ON approval_tokens(request_id);
CREATE TABLE allowlist(agent TEXT NOT NULL, kind TEXT NOT NULL, value TEXT NOT NULL, added_at INTEGER NOT NULL, PRIMARY KEY(agent, kind, value));
CREATE TABLE events(id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL);
CREATE INDEX events_expires ON events(expires_at);
CREATE TABLE memory(list TEXT NOT NULL, id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY(list, id));
CREATE TABLE reminders(id TEXT PRIMARY KEY, conversation TEXT NOT NULL, due_at INTEGER NOT NULL, rev INTEGER NOT NULL, reminder TEXT NOT NULL);
CREATE INDEX reminders_due ON reminders(due_at);
CREATE INDEX reminders_conversation ON reminders(conversation, due_at);
CREATE TABLE cache(key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/** Fencing (issue 20): one row per conversation ever claimed, its epoch only grows. */
const V2 = `
CREATE TABLE leases(conversation TEXT PRIMARY KEY, owner TEXT NOT NULL, epoch INTEGER NOT NULL, taken_at INTEGER NOT NULL) WITHOUT ROWID;
`;

/** Spend totals (issue 24): integers in the key's unit. */
const V3 = `
CREATE TABLE spend(key TEXT PRIMARY KEY, used INTEGER NOT NULL, reserved INTEGER NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID;
`;

/**
 * Soft limits and the purge (issue 24): `raised` is what approvals added to a total's limit,
 * `resets_at` when its period ends (NULL: never). Totals written before get theirs from the period
 * in their key (`…:2026-12-02:usd` a day, `…:2026-12:usd` a month) so the purge finds them too.
 */
const PERIOD = `substr(key, 1, length(key) - CASE WHEN key LIKE '%:usd' THEN 4 ELSE 7 END)`;
const V4 = `
ALTER TABLE spend ADD COLUMN raised INTEGER NOT NULL DEFAULT 0;
ALTER TABLE spend ADD COLUMN resets_at INTEGER;
CREATE INDEX spend_resets ON spend(resets_at) WHERE resets_at IS NOT NULL;
UPDATE spend SET resets_at = CASE
  WHEN substr(${PERIOD}, -11) GLOB ':[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]' THEN CAST(strftime('%s', substr(${PERIOD}, -10), '+1 day') AS INTEGER) * 1000
  WHEN substr(${PERIOD}, -8) GLOB ':[0-9][0-9][0-9][0-9]-[0-9][0-9]' THEN CAST(strftime('%s', substr(${PERIOD}, -7) || '-01', '+1 month') AS INTEGER) * 1000
  END
WHERE key LIKE 'user:%' OR key LIKE 'agent:%';
`;

const split = (ddl: string): string[] =>
  ddl
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** MIGRATIONS[n - 1]: the statements from version n - 1 to n. */
export const MIGRATIONS: readonly (readonly string[])[] = [split(V1), split(V2), split(V3), split(V4)];

export const SCHEMA_VERSION = MIGRATIONS.length;
