/**
 * The names and limits of the replicas' pg-boss queue (./turn-queue.ts), how a turn id becomes
 * a job id, and the hand-over path's enqueue: ONE transaction storing the turn (its platform
 * event claimed, when given), its job and a NOTIFY that wakes every replica's fetch loop.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import type { QueuedTurn } from '../../run/turn.js';
import { enc, type Db } from './db.js';
import { claimedTurnSql } from './repos.js';

export const TURN_QUEUE = 'gatehouse-turns';
export const QUEUE_SCHEMA = 'gatehouse_queue';
export const CHANNEL = 'gatehouse_turns';
/** pg-boss's maximum expiry: a run parked longer is taken over (as if its replica died). */
export const EXPIRE_SECONDS = 24 * 3600;
/** A `failed` job blocks its key for good under key_strict_fifo: never let one get there. */
export const RETRY_LIMIT = 1_000_000;
/** A turn delivered this many times without reaching its checkpoint is dropped (it crashes replicas). */
export const MAX_DELIVERIES = 20;

/** pg-boss ids are uuids; a stored turn id that is not one maps to a stable uuid. */
export function jobIdOf(key: string): string {
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(key)) return key.toLowerCase();
  const h = createHash('sha1').update(key).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** What a job carries: the conversation, and the turn it was sent for (none: a hand-over). */
export interface JobData {
  conversation: string;
  turnId?: string;
}

/** Stores the turn with its job (id = the turn's id: sending it again is a no-op). False: the event was claimed already. */
export async function sendTurnJob(db: Db, boss: PgBoss, conversation: string, queued: QueuedTurn, now: number): Promise<boolean> {
  const claim = queued.claim;
  const nonce = randomUUID();
  return db.tx(
    'queue a turn',
    async (c) => {
      if (claim) {
        // The platform event is claimed in this transaction: claimed and stored, or neither.
        const r = await db.q(c, claimedTurnSql, [conversation, queued.id, enc(queued.turn), now, claim.event, now + claim.ttlMs, nonce]);
        if (r.rows.length === 0) return false; // a redelivery of an event already taken
        await db.q(c, `SELECT pg_notify('${CHANNEL}', '')`, []);
      } else {
        await db.q(
          c,
          `WITH t AS (INSERT INTO queued_turns (conversation, id, turn, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (conversation, id) DO NOTHING)
           SELECT pg_notify('${CHANNEL}', '')`,
          [conversation, queued.id, enc(queued.turn), now],
        );
      }
      const data: JobData = { conversation, turnId: queued.id };
      await boss.send(TURN_QUEUE, data, { id: jobIdOf(queued.id), singletonKey: conversation, db: { executeSql: (text, values) => c.query(text, values) } });
      return true;
    },
    // A commit lost in flight: with a claim, ours when the ledger holds our nonce; without one,
    // both parts are idempotent and are simply sent again.
    async (c) => {
      if (!claim) return undefined;
      const v = await db.q(c, 'SELECT 1 FROM events WHERE id = $1 AND claimer = $2', [claim.event, nonce]);
      return v.rows.length > 0 ? true : undefined;
    },
  );
}
