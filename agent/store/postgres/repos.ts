/**
 * Contract: the small repositories on PostgreSQL, one statement per call (approvals.create too:
 * a data-modifying CTE). Atomic operations are single statements:
 * - events.claim: INSERT ... ON CONFLICT DO UPDATE ... WHERE expired RETURNING (one winner).
 * - approvals.decideOnce: UPDATE ... WHERE decision IS NULL RETURNING.
 * - reminders.swap: UPDATE ... WHERE rev = expected RETURNING; reminders.claimDue: one transaction
 *   that locks the due rows it takes (FOR UPDATE SKIP LOCKED) and moves them.
 * Each stamps a random nonce in its row, so after a connection lost mid-statement the retry first
 * reads whether its own attempt won (never two winners, never a lost win).
 * Retries on a lost connection: every read; the idempotent writes (enqueueTurn keeps the first
 * turn of an id, saveRecord, drops, approvals.create and update, memory.put, cache); the booleans of
 * allowlists.add/remove, memory.remove and reminders.delete are retried too (the state converges;
 * the boolean may then say false for a change the lost attempt made).
 */
import { randomUUID } from 'node:crypto';
import type {
  AllowlistKind,
  AllowlistRepo,
  ApprovalRepo,
  CacheRepo,
  EventLedger,
  MemoryRepo,
  ReminderRepo,
  RunRepo,
  StoredApproval,
  StoredReminder,
} from '../types.js';
import { dec, enc, num, type Db } from './db.js';
import { writePartsFenced } from './run-parts.js';

/**
 * Claims the event ($5, until $6, by $7) and stores the turn only if the claim was won: one statement,
 * so the claim and the turn commit together. A row comes back only for the winner.
 */
export const claimedTurnSql = `WITH c AS (
    INSERT INTO events AS e (id, expires_at, claimer) VALUES ($5, $6, $7)
    ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at, claimer = EXCLUDED.claimer WHERE e.expires_at <= $4
    RETURNING 1 AS claimed
  ), t AS (
    INSERT INTO queued_turns (conversation, id, turn, created_at) SELECT $1, $2, $3, $4 FROM c ON CONFLICT (conversation, id) DO NOTHING
  )
  SELECT claimed FROM c`;

export function runRepo(db: Db): RunRepo {
  return {
    async enqueueTurn(conversation, id, turn, now, claim) {
      if (!claim) {
        await db.query(
          'queue a turn',
          'idempotent',
          `INSERT INTO queued_turns (conversation, id, turn, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (conversation, id) DO NOTHING`,
          [conversation, id, enc(turn), now],
        );
        return true;
      }
      const nonce = randomUUID();
      const r = await db.query('queue a turn', 'once', claimedTurnSql, [conversation, id, enc(turn), now, claim.event, now + claim.ttlMs, nonce], async (c) => {
        // A commit lost in flight: ours when the ledger holds our nonce.
        const v = await db.q(c, 'SELECT 1 AS claimed FROM events WHERE id = $1 AND claimer = $2', [claim.event, nonce]);
        return v.rows.length > 0 ? v : undefined;
      });
      return r.rows.length > 0;
    },
    async dropTurn(conversation, id) {
      await db.query('drop a queued turn', 'idempotent', 'DELETE FROM queued_turns WHERE conversation = $1 AND id = $2', [conversation, id]);
    },
    async queuedTurns() {
      const r = await db.query('list queued turns', 'read', 'SELECT conversation, id, turn FROM queued_turns ORDER BY created_at, ord', []);
      return (r.rows as Array<{ conversation: string; id: string; turn: string }>).map((x) => ({ conversation: x.conversation, id: x.id, turn: dec(x.turn) }));
    },
    async saveRecord(conversation, record, fence) {
      const sql = `INSERT INTO run_records (conversation, record) VALUES ($1, $2) ON CONFLICT (conversation) DO UPDATE SET record = EXCLUDED.record`;
      if (fence) return writePartsFenced(db, 'save a run record', { record: { conversation, record } }, fence);
      await db.query('save a run record', 'idempotent', sql, [conversation, enc(record)]);
    },
    async dropRecord(conversation, fence) {
      const sql = 'DELETE FROM run_records WHERE conversation = $1';
      if (fence) return writePartsFenced(db, 'drop a run record', { record: { conversation, record: null } }, fence);
      await db.query('drop a run record', 'idempotent', sql, [conversation]);
    },
    async pending(conversation, turnId) {
      const r = await db.query(
        "read a conversation's pending work",
        'read',
        `SELECT (SELECT record FROM run_records WHERE conversation = $1) AS record,
                (SELECT turn FROM queued_turns WHERE conversation = $1 AND id = $2) AS turn`,
        [conversation, turnId ?? null],
      );
      const row = r.rows[0] as { record: string | null; turn: string | null };
      return { ...(row.record !== null ? { record: dec(row.record) } : {}), ...(row.turn !== null ? { turn: dec(row.turn) } : {}) };
    },
    async records() {
      const r = await db.query('list run records', 'read', 'SELECT conversation, record FROM run_records ORDER BY ord', []);
      return (r.rows as Array<{ conversation: string; record: string }>).map((x) => ({ conversation: x.conversation, record: dec(x.record) }));
    },
  };
}

type ApprovalRow = { id: string; conversation: string; request: string; decision: string | null; created_at: string };

export function approvalRepo(db: Db): ApprovalRepo {
  return {
    async create(a) {
      await db.query(
        'create an approval',
        'idempotent',
        `WITH a AS (
           INSERT INTO approvals (id, conversation, request, created_at, keep_until) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (id) DO NOTHING RETURNING id
         )
         INSERT INTO approval_tokens (token, request_id, choice)
           SELECT t, $1, c FROM unnest($6::text[], $7::text[]) AS u(t, c)
         ON CONFLICT (token) DO NOTHING`,
        [a.id, a.conversation, enc(a.request), a.createdAt, a.keepUntil, a.tokens.map((t) => t.token), a.tokens.map((t) => t.choice)],
      );
    },
    async get(id, now) {
      const r = await db.query(
        'read an approval',
        'read',
        'SELECT id, conversation, request, decision, created_at FROM approvals WHERE id = $1 AND keep_until >= $2',
        [id, now],
      );
      const row = r.rows[0] as ApprovalRow | undefined;
      if (!row) return undefined;
      const out: StoredApproval = { id: row.id, conversation: row.conversation, request: dec(row.request), createdAt: num(row.created_at) };
      if (row.decision !== null) out.decision = dec(row.decision);
      return out;
    },
    async byToken(token, now) {
      const r = await db.query(
        'find an approval by token',
        'read',
        `SELECT t.request_id, t.choice FROM approval_tokens t JOIN approvals a ON a.id = t.request_id WHERE t.token = $1 AND a.keep_until >= $2`,
        [token, now],
      );
      const row = r.rows[0] as { request_id: string; choice: string } | undefined;
      return row ? { requestId: row.request_id, choice: row.choice } : undefined;
    },
    async pending(conversation, now) {
      const r = await db.query(
        'list pending approvals',
        'read',
        'SELECT id FROM approvals WHERE conversation = $1 AND decision IS NULL AND keep_until >= $2 ORDER BY created_at, ord',
        [conversation, now],
      );
      return (r.rows as Array<{ id: string }>).map((x) => x.id);
    },
    async allPending(now) {
      const r = await db.query(
        'list all pending approvals',
        'read',
        'SELECT id, conversation FROM approvals WHERE decision IS NULL AND keep_until >= $1 ORDER BY created_at, ord',
        [now],
      );
      return (r.rows as Array<{ id: string; conversation: string }>).map((x) => ({ id: x.id, conversation: x.conversation }));
    },
    async update(id, request, keepUntil) {
      const r = await db.query('update an approval', 'idempotent', 'UPDATE approvals SET request = $2, keep_until = $3 WHERE id = $1', [
        id,
        enc(request),
        keepUntil,
      ]);
      return (r.rowCount ?? 0) > 0;
    },
    async decideOnce(id, decision, now, keepUntil) {
      const nonce = randomUUID();
      const r = await db.query(
        'record a decision',
        'once',
        `UPDATE approvals SET decision = $2, decided_by = $5, keep_until = $4 WHERE id = $1 AND decision IS NULL AND keep_until >= $3 RETURNING id`,
        [id, enc(decision), now, keepUntil, nonce],
        async (c) => {
          const v = await db.q(c, 'SELECT 1 FROM approvals WHERE id = $1 AND decided_by = $2', [id, nonce]);
          return v.rows.length > 0 ? v : undefined;
        },
      );
      return r.rows.length > 0;
    },
  };
}

export function allowlistRepo(db: Db): AllowlistRepo {
  return {
    async list(agent) {
      const r = await db.query('list an allowlist', 'read', 'SELECT kind, value FROM allowlists WHERE agent = $1 ORDER BY ord', [agent]);
      return (r.rows as Array<{ kind: AllowlistKind; value: string }>).map((x) => ({ kind: x.kind, value: x.value }));
    },
    async add(agent, kind, value, now) {
      const r = await db.query(
        'add to an allowlist',
        'idempotent',
        'INSERT INTO allowlists (agent, kind, value, granted_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1',
        [agent, kind, value, now],
      );
      return r.rows.length > 0;
    },
    async remove(agent, kind, value) {
      const r = await db.query('remove from an allowlist', 'idempotent', 'DELETE FROM allowlists WHERE agent = $1 AND kind = $2 AND value = $3 RETURNING 1', [
        agent,
        kind,
        value,
      ]);
      return r.rows.length > 0;
    },
  };
}

export function eventLedger(db: Db): EventLedger {
  return {
    async claim(id, ttlMs, now) {
      const nonce = randomUUID();
      const r = await db.query(
        'claim an event',
        'once',
        `INSERT INTO events AS e (id, expires_at, claimer) VALUES ($1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at, claimer = EXCLUDED.claimer WHERE e.expires_at <= $4
         RETURNING 1`,
        [id, now + ttlMs, nonce, now],
        async (c) => {
          const v = await db.q(c, 'SELECT 1 FROM events WHERE id = $1 AND claimer = $2', [id, nonce]);
          return v.rows.length > 0 ? v : undefined;
        },
      );
      return r.rows.length > 0;
    },
  };
}

export function memoryRepo(db: Db): MemoryRepo {
  return {
    async list(list) {
      const r = await db.query('read a memory list', 'read', 'SELECT id, entry FROM memory WHERE list = $1 ORDER BY ord', [list]);
      return (r.rows as Array<{ id: string; entry: string }>).map((x) => ({ id: x.id, entry: dec(x.entry) }));
    },
    async put(list, id, entry) {
      await db.query(
        'write a memory entry',
        'idempotent',
        'INSERT INTO memory (list, id, entry) VALUES ($1, $2, $3) ON CONFLICT (list, id) DO UPDATE SET entry = EXCLUDED.entry',
        [list, id, enc(entry)],
      );
    },
    async remove(list, id) {
      const r = await db.query('remove a memory entry', 'idempotent', 'DELETE FROM memory WHERE list = $1 AND id = $2 RETURNING 1', [list, id]);
      return r.rows.length > 0;
    },
  };
}

type ReminderRow = { id: string; conversation: string; due_at: string; rev: string; reminder: string };
const reminderCols = 'id, conversation, due_at, rev, reminder';
const toReminder = (x: ReminderRow): StoredReminder => ({
  id: x.id,
  conversation: x.conversation,
  dueAt: num(x.due_at),
  rev: num(x.rev),
  reminder: dec(x.reminder),
});

export function reminderRepo(db: Db): ReminderRepo {
  const many = async (what: string, sql: string, params: unknown[]) => ((await db.query(what, 'read', sql, params)).rows as ReminderRow[]).map(toReminder);
  return {
    async put(r) {
      await db.query(
        'store a reminder',
        'idempotent',
        `INSERT INTO reminders (id, conversation, due_at, rev, reminder, writer) VALUES ($1, $2, $3, $4, $5, '')
         ON CONFLICT (id) DO UPDATE SET conversation = EXCLUDED.conversation, due_at = EXCLUDED.due_at, rev = EXCLUDED.rev, reminder = EXCLUDED.reminder, writer = ''`,
        [r.id, r.conversation, r.dueAt, r.rev, enc(r.reminder)],
      );
    },
    async get(id) {
      const [r] = await many('read a reminder', `SELECT ${reminderCols} FROM reminders WHERE id = $1`, [id]);
      return r;
    },
    async delete(id) {
      const r = await db.query('delete a reminder', 'idempotent', 'DELETE FROM reminders WHERE id = $1 RETURNING 1', [id]);
      return r.rows.length > 0;
    },
    byConversation: (conversation) =>
      many('list reminders', `SELECT ${reminderCols} FROM reminders WHERE conversation = $1 ORDER BY due_at, ord`, [conversation]),
    all: () => many('list reminders', `SELECT ${reminderCols} FROM reminders ORDER BY due_at, ord`, []),
    due: (now, limit) => many('list due reminders', `SELECT ${reminderCols} FROM reminders WHERE due_at <= $1 ORDER BY due_at, ord LIMIT $2`, [now, limit]),
    async swap(id, expectedRev, next) {
      const nonce = randomUUID();
      const r = await db.query(
        'swap a reminder',
        'once',
        `UPDATE reminders SET conversation = $3, due_at = $4, rev = $5, reminder = $6, writer = $7 WHERE id = $1 AND rev = $2 RETURNING 1`,
        [id, expectedRev, next.conversation, next.dueAt, next.rev, enc(next.reminder), nonce],
        async (c) => {
          const v = await db.q(c, 'SELECT 1 FROM reminders WHERE id = $1 AND writer = $2', [id, nonce]);
          return v.rows.length > 0 ? v : undefined;
        },
      );
      return r.rows.length > 0;
    },
    async claimDue(now, limit, next) {
      const nonce = randomUUID();
      const claimed: Array<{ before: StoredReminder; after: StoredReminder }> = [];
      // Rows another replica is claiming right now are skipped, not waited for: replicas take
      // disjoint rows, and each row's move (its rev) commits with the lock held.
      return db.tx(
        'claim due reminders',
        async (c) => {
          claimed.length = 0;
          const r = await db.q(c, `SELECT ${reminderCols} FROM reminders WHERE due_at <= $1 ORDER BY due_at, ord LIMIT $2 FOR UPDATE SKIP LOCKED`, [
            now,
            limit,
          ]);
          for (const before of (r.rows as ReminderRow[]).map(toReminder)) {
            const after = next(before);
            if (!after) continue;
            await db.q(c, 'UPDATE reminders SET conversation = $2, due_at = $3, rev = $4, reminder = $5, writer = $6 WHERE id = $1', [
              before.id,
              after.conversation,
              after.dueAt,
              after.rev,
              enc(after.reminder),
              nonce,
            ]);
            claimed.push({ before, after });
          }
          return [...claimed];
        },
        // A commit lost in flight: the rows stamped with this attempt's nonce are the ones it claimed.
        async (c) => {
          const v = await db.q(c, 'SELECT id FROM reminders WHERE writer = $1', [nonce]);
          const ids = new Set((v.rows as Array<{ id: string }>).map((x) => x.id));
          return ids.size > 0 ? claimed.filter((x) => ids.has(x.before.id)) : undefined;
        },
      );
    },
  };
}

export function cacheRepo(db: Db): CacheRepo {
  return {
    async get(key) {
      const r = await db.query('read the cache', 'read', 'SELECT value FROM cache WHERE key = $1', [enc(key)]);
      const row = r.rows[0] as { value: string } | undefined;
      return row ? dec(row.value) : undefined;
    },
    async set(key, value) {
      await db.query('write the cache', 'idempotent', 'INSERT INTO cache (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value', [
        enc(key),
        enc(value),
      ]);
    },
    async delete(key) {
      await db.query('delete from the cache', 'idempotent', 'DELETE FROM cache WHERE key = $1', [enc(key)]);
    },
  };
}
