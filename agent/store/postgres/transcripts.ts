/**
 * Contract: TranscriptRepo on PostgreSQL. A row per message in transcript_messages, summaries as
 * rows in transcript_summaries, one row per conversation (agent, state, updated_at, last_seq,
 * base_seq, revision) that every write locks first, so writes to one conversation serialize.
 * Round trips: load 1 statement; revision 1; an append-only write 1 statement (data-modifying
 * CTEs); any other write = BEGIN + lock/create 1 + 1 per change + update 1 + COMMIT; listRecent 1;
 * applyRetention 1; delete 1.
 * Retries: reads, delete and tool results are retried on a lost connection. A write stamps a nonce
 * in its conversation row: lost before it was sent (or before COMMIT), it runs again; lost while
 * committing, the retry first reads whether the stamp is there (then it is done), else runs again,
 * where an append whose seqs are stored fails rather than doubling a message.
 */
import {
  StoreConflictError,
  type ConversationListing,
  type Fence,
  type LoadedTranscript,
  type RetentionRule,
  type TranscriptRepo,
  type TranscriptWrite,
} from '../types.js';
import { randomUUID } from 'node:crypto';
import { dec, enc, num, type Client, type Db } from './db.js';
import { checkFence } from './leases.js';
import { fenceCte, fencedMiss, partsCtes, type RunParts } from './run-parts.js';

/** True when every change is an append: the write is then ONE statement (see `appendStatement`). */
export function appendOnly(w: TranscriptWrite): boolean {
  return w.changes.every((ch) => ch.op === 'append');
}

/**
 * An append-only write (and a checkpoint's run parts) as ONE statement, atomic on its own: the
 * conversation row is created / compare-and-set first (`c`), and the messages, the queued-turn drop
 * and the record are written only if `c` returned its row. No row back: the expected revision was
 * not the stored one, or (given a fence) the fence moved. An append onto a stored seq fails the
 * whole statement (unique key).
 */
function appendStatement(w: TranscriptWrite, nonce: string, parts: RunParts = {}, fence?: Fence): { sql: string; params: unknown[] } {
  const seqs: number[] = [];
  const msgs: string[] = [];
  for (const ch of w.changes) if (ch.op === 'append') for (const r of ch.rows) seqs.push(r.seq), msgs.push(enc(r.message));
  const maxSeq = seqs.reduce((a, b) => Math.max(a, b), 0);
  const params: unknown[] = [w.conversation, w.agent, enc(w.state), w.now, maxSeq, nonce, seqs, msgs];
  const ctes = fence ? [fenceCte(params, fence)] : [];
  const held = fence ? ' WHERE EXISTS (SELECT 1 FROM f)' : '';
  const set = `agent = $2, state = $3, updated_at = $4, activity = nextval('conversation_activity'), last_seq = GREATEST(conv.last_seq, $5), revision = conv.revision + 1, writer = $6`;
  const insert = `INSERT INTO conversations AS conv (conversation, agent, state, updated_at, activity, last_seq, revision, writer)
                  SELECT $1, $2, $3, $4::bigint, nextval('conversation_activity'), $5::bigint, 1, $6${held}`;
  let head: string;
  if (w.expectRevision === undefined) head = `${insert} ON CONFLICT (conversation) DO UPDATE SET ${set} RETURNING revision, (xmax = 0) AS created`;
  else if (w.expectRevision === 0) head = `${insert} ON CONFLICT (conversation) DO NOTHING RETURNING revision, true AS created`;
  else {
    params.push(w.expectRevision);
    head = `UPDATE conversations AS conv SET ${set} WHERE conversation = $1 AND revision = $${params.length}${fence ? ' AND EXISTS (SELECT 1 FROM f)' : ''} RETURNING revision, false AS created`;
  }
  ctes.push(
    `c AS (${head})`,
    `m AS (INSERT INTO transcript_messages (conversation, seq, message) SELECT $1, s, x FROM unnest($7::bigint[], $8::text[]) AS t(s, x) WHERE EXISTS (SELECT 1 FROM c))`,
    ...partsCtes(params, parts, 'c'),
  );
  return { sql: `WITH ${ctes.join(',\n')}\nSELECT revision, created FROM c`, params };
}

/** Runs `appendStatement`; a moved fence becomes a FencedError, a compare-and-set miss a StoreConflictError. */
export async function runAppend(
  db: Db,
  c: Client,
  w: TranscriptWrite,
  nonce: string,
  parts?: RunParts,
  fence?: Fence,
): Promise<{ revision: number; created: boolean }> {
  const { sql, params } = appendStatement(w, nonce, parts, fence);
  const r = await db.q(c, sql, params);
  const row = r.rows[0] as { revision: string; created: boolean } | undefined;
  if (!row) {
    const moved = fence ? await fencedMiss(db, c, fence) : undefined;
    if (moved) throw moved;
    const now = await db.q(c, 'SELECT revision FROM conversations WHERE conversation = $1', [w.conversation]);
    const actual = now.rows[0] as { revision: string } | undefined;
    throw new StoreConflictError(w.conversation, w.expectRevision ?? 0, actual ? num(actual.revision) : undefined);
  }
  return { revision: num(row.revision), created: row.created };
}

/**
 * After a connection lost mid-commit: did the write stamped `nonce` commit? Its row says so while
 * no later write replaced the stamp; if one did, rerunning an append fails on its seqs (never a
 * duplicate message).
 */
export async function verifyWrite(db: Db, c: Client, conversation: string, nonce: string): Promise<{ revision: number; created: boolean } | undefined> {
  const r = await db.q(c, 'SELECT revision FROM conversations WHERE conversation = $1 AND writer = $2', [conversation, nonce]);
  const row = r.rows[0] as { revision: string } | undefined;
  if (!row) return undefined;
  const revision = num(row.revision);
  return { revision, created: revision === 1 };
}

/**
 * Applies a write with any changes inside an open transaction (shared with checkpoint). An append
 * onto a stored seq fails (unique key) and so undoes the whole transaction.
 */
export async function applyWrite(db: Db, c: Client, w: TranscriptWrite, nonce: string): Promise<{ revision: number; created: boolean }> {
  // Creates the row when missing and locks it either way (the no-op update takes the row lock).
  const head = await db.q(
    c,
    `INSERT INTO conversations AS c (conversation, agent, state, updated_at, activity, revision)
       VALUES ($1, $2, $3, $4, 0, 0)
     ON CONFLICT (conversation) DO UPDATE SET revision = c.revision
     RETURNING revision, last_seq, base_seq, (xmax = 0) AS created`,
    [w.conversation, w.agent, enc(w.state), w.now],
  );
  const row = head.rows[0] as { revision: string; last_seq: string; base_seq: string; created: boolean };
  const created = row.created;
  const before = created ? undefined : num(row.revision);
  if (w.expectRevision !== undefined && (before ?? 0) !== w.expectRevision) {
    throw new StoreConflictError(w.conversation, w.expectRevision, before);
  }
  let lastSeq = num(row.last_seq);
  let baseSeq = num(row.base_seq);
  for (const ch of w.changes) {
    switch (ch.op) {
      case 'append': {
        if (ch.rows.length === 0) break;
        await db.q(
          c,
          `INSERT INTO transcript_messages (conversation, seq, message)
             SELECT $1, s, m FROM unnest($2::bigint[], $3::text[]) AS t(s, m)`,
          [w.conversation, ch.rows.map((r) => r.seq), ch.rows.map((r) => enc(r.message))],
        );
        for (const r of ch.rows) lastSeq = Math.max(lastSeq, r.seq);
        break;
      }
      case 'replace': {
        if (ch.rows.length === 0) break;
        await db.q(
          c,
          `UPDATE transcript_messages t SET message = u.m
             FROM unnest($2::bigint[], $3::text[]) AS u(s, m)
            WHERE t.conversation = $1 AND t.seq = u.s`,
          [w.conversation, ch.rows.map((r) => r.seq), ch.rows.map((r) => enc(r.message))],
        );
        break;
      }
      case 'truncate': {
        // Messages and any summary past the point go; the base falls back to the newest summary left.
        const r = await db.q(
          c,
          `WITH m AS (DELETE FROM transcript_messages WHERE conversation = $1 AND seq > $2),
                s AS (DELETE FROM transcript_summaries WHERE conversation = $1 AND through_seq > $2)
           SELECT coalesce(max(through_seq), 0) AS base FROM transcript_summaries
            WHERE conversation = $1 AND through_seq <= $2`,
          [w.conversation, ch.afterSeq],
        );
        lastSeq = Math.min(lastSeq, ch.afterSeq);
        if (baseSeq > ch.afterSeq) baseSeq = num(r.rows[0]?.base ?? 0);
        break;
      }
      case 'rebase': {
        await db.q(
          c,
          `INSERT INTO transcript_summaries (conversation, through_seq, base, created_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (conversation, through_seq) DO UPDATE SET base = EXCLUDED.base, created_at = EXCLUDED.created_at`,
          [w.conversation, ch.throughSeq, enc(ch.base), w.now],
        );
        baseSeq = ch.throughSeq;
        lastSeq = Math.max(lastSeq, ch.throughSeq);
        break;
      }
    }
  }
  const done = await db.q(
    c,
    `UPDATE conversations SET agent = $2, state = $3, updated_at = $4, activity = nextval('conversation_activity'),
            last_seq = $5, base_seq = $6, revision = revision + 1, writer = $7
      WHERE conversation = $1 RETURNING revision`,
    [w.conversation, w.agent, enc(w.state), w.now, lastSeq, baseSeq, nonce],
  );
  return { revision: num(done.rows[0]?.revision), created };
}

export function transcriptRepo(db: Db): TranscriptRepo {
  return {
    async load(conversation) {
      const r = await db.query(
        'load a transcript',
        'read',
        `SELECT c.agent, c.state, c.updated_at, c.base_seq, c.revision,
                (SELECT s.base FROM transcript_summaries s WHERE s.conversation = c.conversation AND s.through_seq = c.base_seq) AS base,
                (SELECT array_agg(m.seq ORDER BY m.seq) FROM transcript_messages m WHERE m.conversation = c.conversation AND m.seq > c.base_seq) AS seqs,
                (SELECT array_agg(m.message ORDER BY m.seq) FROM transcript_messages m WHERE m.conversation = c.conversation AND m.seq > c.base_seq) AS messages
           FROM conversations c WHERE c.conversation = $1`,
        [conversation],
      );
      const row = r.rows[0] as
        | {
            agent: string;
            state: string;
            updated_at: string;
            base_seq: string;
            revision: string;
            base: string | null;
            seqs: string[] | null;
            messages: string[] | null;
          }
        | undefined;
      if (!row) return undefined;
      const seqs = row.seqs ?? [];
      const messages = row.messages ?? [];
      const out: LoadedTranscript = {
        agent: row.agent,
        state: dec(row.state) as Record<string, unknown>,
        updatedAt: num(row.updated_at),
        base: row.base === null ? [] : (dec(row.base) as unknown[]),
        baseSeq: num(row.base_seq),
        rows: seqs.map((s, i) => ({ seq: num(s), message: dec(messages[i]) })),
        revision: num(row.revision),
      };
      return out;
    },

    async revision(conversation) {
      const r = await db.query('read a transcript revision', 'read', 'SELECT revision FROM conversations WHERE conversation = $1', [conversation]);
      const row = r.rows[0] as { revision: string } | undefined;
      return row ? num(row.revision) : undefined;
    },

    async write(w) {
      const nonce = randomUUID();
      const what = `write the transcript of ${w.conversation}`;
      const verify = (c: Client) => verifyWrite(db, c, w.conversation, nonce);
      // A fenced write checks its claim in the same statement (an append) or transaction.
      const fence = w.fence;
      if (appendOnly(w)) return db.run(what, 'once', (c) => runAppend(db, c, w, nonce, {}, fence), verify);
      if (fence) return db.tx(what, async (c) => (await checkFence(db, c, fence), applyWrite(db, c, w, nonce)), verify);
      return db.tx(what, (c) => applyWrite(db, c, w, nonce), verify);
    },

    async delete(conversation) {
      await db.query(
        `delete the transcript of ${conversation}`,
        'idempotent',
        `WITH m AS (DELETE FROM transcript_messages WHERE conversation = $1),
              s AS (DELETE FROM transcript_summaries WHERE conversation = $1),
              t AS (DELETE FROM tool_results WHERE conversation = $1)
         DELETE FROM conversations WHERE conversation = $1`,
        [conversation],
      );
    },

    async listRecent(opts) {
      const params: unknown[] = [opts.limit, opts.offset ?? 0];
      let where = '';
      if (opts.agent !== undefined) {
        params.push(opts.agent);
        where = 'WHERE agent = $3';
      }
      const r = await db.query(
        'list recent conversations',
        'read',
        `SELECT conversation, agent, updated_at, last_seq FROM conversations ${where}
          ORDER BY updated_at DESC, activity DESC LIMIT $1 OFFSET $2`,
        params,
      );
      return (r.rows as Array<{ conversation: string; agent: string; updated_at: string; last_seq: string }>).map(
        (x): ConversationListing => ({ conversation: x.conversation, agent: x.agent, updatedAt: num(x.updated_at), lastSeq: num(x.last_seq) }),
      );
    },

    async applyRetention(rule: RetentionRule) {
      // Both halves walk conversations_by_agent: the idle range from its old end, the overflow
      // past `keep` rows; neither reads the agent's other conversations.
      const r = await db.query(
        `apply retention for ${rule.agent}`,
        'idempotent',
        `WITH doomed AS (
           SELECT conversation FROM conversations WHERE agent = $1 AND $3::bigint > 0 AND updated_at < $3::bigint
           UNION
           (SELECT conversation FROM conversations WHERE agent = $1 ORDER BY updated_at DESC, activity DESC OFFSET $2)
         ),
         m AS (DELETE FROM transcript_messages t USING doomed d WHERE t.conversation = d.conversation),
         s AS (DELETE FROM transcript_summaries t USING doomed d WHERE t.conversation = d.conversation),
         t AS (DELETE FROM tool_results t USING doomed d WHERE t.conversation = d.conversation)
         DELETE FROM conversations c USING doomed d WHERE c.conversation = d.conversation AND c.agent = $1
         RETURNING c.conversation`,
        [rule.agent, Math.max(0, rule.keep), rule.idleBefore],
      );
      return (r.rows as Array<{ conversation: string }>).map((x) => x.conversation);
    },

    async putToolResult(conversation, id, content) {
      await db.query(
        'store a tool result',
        'idempotent',
        `INSERT INTO tool_results (conversation, id, content) VALUES ($1, $2, $3)
         ON CONFLICT (conversation, id) DO UPDATE SET content = EXCLUDED.content`,
        [conversation, id, enc(content)],
      );
    },

    async getToolResult(conversation, id) {
      const r = await db.query('read a tool result', 'read', 'SELECT content FROM tool_results WHERE conversation = $1 AND id = $2', [conversation, id]);
      const row = r.rows[0] as { content: string } | undefined;
      return row ? (dec(row.content) as string) : undefined;
    },
  };
}
