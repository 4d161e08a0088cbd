/**
 * Contract: the schema, as numbered migrations applied in order, each in its own transaction with
 * its row in `gatehouse_schema`. `migrate` holds a session advisory lock while it reads the version
 * and applies what is missing, so N processes starting at once migrate once. A store whose schema
 * is newer than this build knows is refused (an older Gatehouse must not write it).
 * Values are JSON stored as text (exact round trip; jsonb would reorder keys and refuse \u0000);
 * tool results and cache keys too, as text cannot hold a NUL character.
 */
import { StoreError } from '../types.js';
import type { Client, Db } from './db.js';
import type { Log } from '../../log.js';

interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'repositories',
    sql: `
CREATE SEQUENCE conversation_activity;
CREATE TABLE conversations (
  conversation text PRIMARY KEY,
  agent text NOT NULL,
  state text NOT NULL,
  updated_at bigint NOT NULL,
  activity bigint NOT NULL,
  last_seq bigint NOT NULL DEFAULT 0,
  base_seq bigint NOT NULL DEFAULT 0,
  revision bigint NOT NULL DEFAULT 0,
  writer text NOT NULL DEFAULT ''
);
CREATE INDEX conversations_by_agent ON conversations (agent, updated_at DESC, activity DESC);
CREATE INDEX conversations_by_activity ON conversations (updated_at DESC, activity DESC);
CREATE TABLE transcript_messages (
  conversation text NOT NULL,
  seq bigint NOT NULL,
  message text NOT NULL,
  PRIMARY KEY (conversation, seq)
);
CREATE TABLE transcript_summaries (
  conversation text NOT NULL,
  through_seq bigint NOT NULL,
  base text NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (conversation, through_seq)
);
CREATE TABLE tool_results (
  conversation text NOT NULL,
  id text NOT NULL,
  content text NOT NULL,
  PRIMARY KEY (conversation, id)
);
CREATE TABLE queued_turns (
  conversation text NOT NULL,
  id text NOT NULL,
  turn text NOT NULL,
  created_at bigint NOT NULL,
  ord bigserial NOT NULL,
  PRIMARY KEY (conversation, id)
);
CREATE INDEX queued_turns_order ON queued_turns (created_at, ord);
CREATE TABLE run_records (
  conversation text PRIMARY KEY,
  record text NOT NULL,
  ord bigserial NOT NULL
);
CREATE TABLE approvals (
  id text PRIMARY KEY,
  conversation text NOT NULL,
  request text NOT NULL,
  decision text,
  decided_by text,
  created_at bigint NOT NULL,
  keep_until bigint NOT NULL,
  ord bigserial NOT NULL
);
CREATE INDEX approvals_pending ON approvals (conversation, created_at, ord) WHERE decision IS NULL;
CREATE INDEX approvals_all_pending ON approvals (created_at, ord) WHERE decision IS NULL;
CREATE INDEX approvals_expiry ON approvals (keep_until);
CREATE TABLE approval_tokens (
  token text PRIMARY KEY,
  request_id text NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
  choice text NOT NULL
);
CREATE INDEX approval_tokens_request ON approval_tokens (request_id);
CREATE TABLE allowlists (
  agent text NOT NULL,
  kind text NOT NULL,
  value text NOT NULL,
  granted_at bigint NOT NULL,
  ord bigserial NOT NULL,
  PRIMARY KEY (agent, kind, value)
);
CREATE TABLE events (
  id text PRIMARY KEY,
  expires_at bigint NOT NULL,
  claimer text NOT NULL
);
CREATE INDEX events_expiry ON events (expires_at);
CREATE TABLE memory (
  list text NOT NULL,
  id text NOT NULL,
  entry text NOT NULL,
  ord bigserial NOT NULL,
  PRIMARY KEY (list, id)
);
CREATE TABLE reminders (
  id text PRIMARY KEY,
  conversation text NOT NULL,
  due_at bigint NOT NULL,
  rev bigint NOT NULL,
  reminder text NOT NULL,
  writer text NOT NULL,
  ord bigserial NOT NULL
);
CREATE INDEX reminders_due ON reminders (due_at, ord);
CREATE INDEX reminders_by_conversation ON reminders (conversation, due_at, ord);
CREATE TABLE cache (
  key text PRIMARY KEY,
  value text NOT NULL
);
`,
  },
  {
    version: 2,
    name: 'leases',
    // Fencing (issue 20): one row per conversation ever claimed; its epoch only grows.
    sql: `
CREATE TABLE leases (
  conversation text PRIMARY KEY,
  owner text NOT NULL,
  epoch bigint NOT NULL,
  taken_at bigint NOT NULL
);
`,
  },
  {
    version: 3,
    name: 'spend',
    // Spend totals (issue 24): integers in the key's unit (micro-USD or tokens).
    sql: `
CREATE TABLE spend (
  key text PRIMARY KEY,
  used bigint NOT NULL,
  reserved bigint NOT NULL,
  updated_at bigint NOT NULL
);
`,
  },
  {
    version: 4,
    name: 'conversation holders',
    // The owner fast path (./owner-lanes.ts): the replica running a conversation from its own
    // lane holds it (leases.holder = its liveness tag; leases.stored counts the turns stored on
    // the fast path, so a release can tell it missed none); a holder is alive while its liveness
    // session is connected and its beat is fresh.
    sql: `
ALTER TABLE leases ADD COLUMN holder text;
ALTER TABLE leases ADD COLUMN stored bigint NOT NULL DEFAULT 0;
CREATE INDEX leases_held ON leases (holder) WHERE holder IS NOT NULL;
CREATE INDEX queued_turns_conversation ON queued_turns (conversation, ord);
CREATE TABLE replica_beats (
  tag text PRIMARY KEY,
  owner text NOT NULL,
  beat_at timestamptz NOT NULL
);
`,
  },
  {
    version: 5,
    name: 'spend limits raised and purged',
    // Soft limits and the purge (issue 24): what approvals raised a total's limit by, and when its
    // period ends (NULL: never). Totals written before get theirs from the period in their key.
    sql: `
ALTER TABLE spend ADD COLUMN raised bigint NOT NULL DEFAULT 0;
ALTER TABLE spend ADD COLUMN resets_at bigint;
CREATE INDEX spend_resets ON spend (resets_at) WHERE resets_at IS NOT NULL;
UPDATE spend SET resets_at = CASE
  WHEN p ~ '^\\d{4}-\\d{2}-\\d{2}$' THEN extract(epoch FROM p::date + interval '1 day')::bigint * 1000
  ELSE extract(epoch FROM (p || '-01')::date + interval '1 month')::bigint * 1000
  END
FROM (SELECT key AS k, substring(key FROM ':(\\d{4}-\\d{2}(?:-\\d{2})?):(?:usd|tokens)$') AS p FROM spend) periods
WHERE spend.key = periods.k AND periods.p IS NOT NULL AND (spend.key LIKE 'user:%' OR spend.key LIKE 'agent:%');
`,
  },
];

/** Any fixed 64-bit key: the advisory lock is per database. */
const MIGRATION_LOCK = 0x6761_7465_686f_7573n; // "gatehous"

export async function migrate(db: Db, now: number, log: Log): Promise<{ version: number; applied: number[] }> {
  const c: Client = await db.pool.connect();
  let broken: Error | undefined;
  try {
    await db.q(c, 'SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()]);
    try {
      await db.q(c, `CREATE TABLE IF NOT EXISTS gatehouse_schema (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`);
      const r = await db.q(c, 'SELECT coalesce(max(version), 0) AS v FROM gatehouse_schema');
      const current = Number(r.rows[0]?.v ?? 0);
      const latest = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;
      if (current > latest) {
        throw new StoreError(
          `the PostgreSQL store ${db.target.host}:${db.target.port}/${db.target.database} has schema version ${current}, newer than this Gatehouse knows (${latest}): run the newer Gatehouse that wrote it, or restore a backup`,
          'schema-newer',
        );
      }
      const applied: number[] = [];
      for (const m of MIGRATIONS) {
        if (m.version <= current) continue;
        await db.q(c, 'BEGIN');
        try {
          await db.q(c, m.sql);
          await db.q(c, 'INSERT INTO gatehouse_schema (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, now]);
          await db.q(c, 'COMMIT');
        } catch (err) {
          await db.q(c, 'ROLLBACK').catch(() => undefined);
          throw err;
        }
        applied.push(m.version);
        log('info', `postgres: applied schema migration ${m.version} (${m.name})`);
      }
      return { version: Math.max(current, latest), applied };
    } finally {
      await db.q(c, 'SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]).catch((err: unknown) => {
        broken = err as Error;
      });
    }
  } catch (err) {
    broken = err as Error;
    throw err;
  } finally {
    c.release(broken);
  }
}
