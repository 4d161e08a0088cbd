/**
 * Transcripts on SQLite: a row per message, summaries as rows, one row per conversation.
 *
 * Contract (beyond agent/store/types.ts):
 * - `conversations(key, agent, state, updated_at, last_seq, base_seq, revision)` is indexed by
 *   (agent, updated_at): listRecent and applyRetention read that index, never a message.
 * - A write is: the conversation row first (an upsert, or with expectRevision a compare-and-set on
 *   revision marked `require`, so a conflict rolls the whole batch back), then each change, then
 *   last_seq/base_seq recomputed from the indexes (max(seq), max(through_seq)). Its cost grows with
 *   what it changes, not with the transcript's length.
 * - Messages at or below a summary stay stored (history); load reads only the latest summary and the
 *   rows after it. A truncate below a summary drops that summary too.
 */
import type { ConversationListing, LoadedTranscript, RetentionRule, TranscriptRepo, TranscriptWrite } from '../types.js';
import type { Row, Statement } from './worker.js';

export type Exec = (stmts: Statement[]) => Promise<unknown[]>;

const json = (v: unknown): string => JSON.stringify(v);
const parse = (v: unknown): unknown => JSON.parse(String(v));

/** The statements of one write; `head` is the index of the revision statement within them. */
export function writeStatements(w: TranscriptWrite): { stmts: Statement[]; head: number } {
  const stmts: Statement[] = [];
  const c = w.conversation;
  const state = json(w.state);
  if (w.expectRevision === undefined) {
    stmts.push({
      sql:
        'INSERT INTO conversations(key, agent, state, updated_at, last_seq, base_seq, revision) VALUES (?, ?, ?, ?, 0, 0, 1) ' +
        'ON CONFLICT(key) DO UPDATE SET agent = excluded.agent, state = excluded.state, updated_at = excluded.updated_at, revision = conversations.revision + 1 RETURNING revision',
      params: [c, w.agent, state, w.now],
      mode: 'get',
    });
  } else if (w.expectRevision === 0) {
    stmts.push({
      sql: 'INSERT INTO conversations(key, agent, state, updated_at, last_seq, base_seq, revision) VALUES (?, ?, ?, ?, 0, 0, 1) ON CONFLICT(key) DO NOTHING RETURNING revision',
      params: [c, w.agent, state, w.now],
      mode: 'get',
      require: true,
    });
  } else {
    stmts.push({
      sql: 'UPDATE conversations SET agent = ?, state = ?, updated_at = ?, revision = revision + 1 WHERE key = ? AND revision = ? RETURNING revision',
      params: [w.agent, state, w.now, c, w.expectRevision],
      mode: 'get',
      require: true,
    });
  }
  for (const ch of w.changes) {
    switch (ch.op) {
      case 'append':
        for (const r of ch.rows)
          stmts.push({ sql: 'INSERT INTO messages(conversation, seq, message) VALUES (?, ?, ?)', params: [c, r.seq, json(r.message)], mode: 'run' });
        break;
      case 'replace':
        for (const r of ch.rows)
          stmts.push({ sql: 'UPDATE messages SET message = ? WHERE conversation = ? AND seq = ?', params: [json(r.message), c, r.seq], mode: 'run' });
        break;
      case 'truncate':
        stmts.push({ sql: 'DELETE FROM messages WHERE conversation = ? AND seq > ?', params: [c, ch.afterSeq], mode: 'run' });
        stmts.push({ sql: 'DELETE FROM summaries WHERE conversation = ? AND through_seq > ?', params: [c, ch.afterSeq], mode: 'run' });
        break;
      case 'rebase':
        stmts.push({
          sql: 'INSERT OR REPLACE INTO summaries(conversation, through_seq, base) VALUES (?, ?, ?)',
          params: [c, ch.throughSeq, json(ch.base)],
          mode: 'run',
        });
        break;
    }
  }
  if (w.changes.length > 0) {
    stmts.push({
      sql:
        'UPDATE conversations SET last_seq = coalesce((SELECT max(seq) FROM messages WHERE conversation = ?), 0), ' +
        'base_seq = coalesce((SELECT max(through_seq) FROM summaries WHERE conversation = ?), 0) WHERE key = ?',
      params: [c, c, c],
      mode: 'run',
    });
  }
  return { stmts, head: 0 };
}

export function revisionStatement(conversation: string): Statement {
  return { sql: 'SELECT revision FROM conversations WHERE key = ?', params: [conversation], mode: 'get' };
}

/** The conversations the rule deletes: beyond `keep` most recent, or idle since before `idleBefore`. */
const DOOMED =
  'SELECT key FROM (SELECT key FROM conversations WHERE agent = ? ORDER BY updated_at DESC LIMIT -1 OFFSET ?) ' +
  'UNION SELECT key FROM conversations WHERE agent = ? AND updated_at < ?';

export function sqliteTranscripts(exec: Exec, write: (w: TranscriptWrite) => Promise<{ revision: number; created: boolean }>): TranscriptRepo {
  return {
    async load(conversation) {
      const [head, summary, rows] = (await exec([
        { sql: 'SELECT agent, state, updated_at, base_seq, revision FROM conversations WHERE key = ?', params: [conversation], mode: 'get' },
        {
          sql: 'SELECT base FROM summaries WHERE conversation = ? AND through_seq = (SELECT base_seq FROM conversations WHERE key = ?)',
          params: [conversation, conversation],
          mode: 'get',
        },
        {
          sql: 'SELECT seq, message FROM messages WHERE conversation = ? AND seq > coalesce((SELECT base_seq FROM conversations WHERE key = ?), 0) ORDER BY seq',
          params: [conversation, conversation],
          mode: 'all',
        },
      ])) as [Row | undefined, Row | undefined, Row[]];
      if (!head) return undefined;
      const loaded: LoadedTranscript = {
        agent: String(head.agent),
        state: parse(head.state) as Record<string, unknown>,
        updatedAt: Number(head.updated_at),
        base: summary ? (parse(summary.base) as unknown[]) : [],
        baseSeq: summary ? Number(head.base_seq) : 0,
        rows: rows.map((r) => ({ seq: Number(r.seq), message: parse(r.message) })),
        revision: Number(head.revision),
      };
      return loaded;
    },
    async revision(conversation) {
      const [row] = (await exec([revisionStatement(conversation)])) as [Row | undefined];
      return row ? Number(row.revision) : undefined;
    },
    write,
    async delete(conversation) {
      await exec(deleteStatements('= ?', [conversation]));
    },
    async listRecent({ agent, limit, offset = 0 }) {
      const where = agent === undefined ? '' : 'WHERE agent = ? ';
      const [rows] = (await exec([
        {
          sql: `SELECT key, agent, updated_at, last_seq FROM conversations ${where}ORDER BY updated_at DESC LIMIT ? OFFSET ?`,
          params: [...(agent === undefined ? [] : [agent]), limit, offset],
          mode: 'all',
        },
      ])) as [Row[]];
      return rows.map(
        (r): ConversationListing => ({ conversation: String(r.key), agent: String(r.agent), updatedAt: Number(r.updated_at), lastSeq: Number(r.last_seq) }),
      );
    },
    async applyRetention(rule: RetentionRule) {
      const params = [rule.agent, Math.max(0, rule.keep), rule.agent, rule.idleBefore];
      const results = await exec([{ sql: DOOMED, params, mode: 'all' }, ...deleteStatements(`IN (${DOOMED})`, params)]);
      return (results[0] as Row[]).map((r) => String(r.key));
    },
    async putToolResult(conversation, id, content) {
      await exec([
        { sql: 'INSERT OR REPLACE INTO tool_results(conversation, id, content) VALUES (?, ?, ?)', params: [conversation, id, content], mode: 'run' },
      ]);
    },
    async getToolResult(conversation, id) {
      const [row] = (await exec([{ sql: 'SELECT content FROM tool_results WHERE conversation = ? AND id = ?', params: [conversation, id], mode: 'get' }])) as [
        Row | undefined,
      ];
      return row ? String(row.content) : undefined;
    },
  };
}

/** Deletes everything of the conversations matched by `match` (`= ?` or `IN (...)`); the row goes last. */
function deleteStatements(match: string, params: unknown[]): Statement[] {
  return [
    { sql: `DELETE FROM messages WHERE conversation ${match}`, params, mode: 'run' },
    { sql: `DELETE FROM summaries WHERE conversation ${match}`, params, mode: 'run' },
    { sql: `DELETE FROM tool_results WHERE conversation ${match}`, params, mode: 'run' },
    { sql: `DELETE FROM conversations WHERE key ${match}`, params, mode: 'run' },
  ];
}
