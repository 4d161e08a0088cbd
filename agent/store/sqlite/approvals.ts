/**
 * Approvals on SQLite: the request JSON, its decision in a column of its own (NULL: undecided), and
 * its button tokens in a table keyed by token. A token lives as long as its request (the sweep in
 * ./index.ts deletes both once past keep_until).
 *
 * Contract (beyond agent/store/types.ts): "live" means now <= keep_until. decideOnce is one
 * `UPDATE ... WHERE decision IS NULL ... RETURNING`: of any number of processes, one wins.
 */
import type { ApprovalRepo, StoredApproval } from '../types.js';
import type { Exec } from './transcripts.js';
import type { Row, Statement } from './worker.js';

export function sqliteApprovals(exec: Exec): ApprovalRepo {
  const one = async (st: Statement): Promise<Row | undefined> => ((await exec([st])) as [Row | undefined])[0];
  const all = async (st: Statement): Promise<Row[]> => ((await exec([st])) as [Row[]])[0];
  return {
    async create(a) {
      await exec([
        {
          sql: 'INSERT INTO approvals(id, conversation, request, decision, created_at, keep_until) VALUES (?, ?, ?, NULL, ?, ?)',
          params: [a.id, a.conversation, JSON.stringify(a.request), a.createdAt, a.keepUntil],
          mode: 'run',
        },
        ...a.tokens.map(
          (t): Statement => ({
            sql: 'INSERT INTO approval_tokens(token, request_id, choice) VALUES (?, ?, ?)',
            params: [t.token, a.id, t.choice],
            mode: 'run',
          }),
        ),
      ]);
    },
    async get(id, now) {
      const r = await one({
        sql: 'SELECT id, conversation, request, decision, created_at FROM approvals WHERE id = ? AND keep_until >= ?',
        params: [id, now],
        mode: 'get',
      });
      if (!r) return undefined;
      const out: StoredApproval = {
        id: String(r.id),
        conversation: String(r.conversation),
        request: JSON.parse(String(r.request)),
        createdAt: Number(r.created_at),
      };
      if (r.decision !== null && r.decision !== undefined) out.decision = JSON.parse(String(r.decision));
      return out;
    },
    async byToken(token, now) {
      const r = await one({
        sql: 'SELECT t.request_id, t.choice FROM approval_tokens t JOIN approvals a ON a.id = t.request_id WHERE t.token = ? AND a.keep_until >= ?',
        params: [token, now],
        mode: 'get',
      });
      return r ? { requestId: String(r.request_id), choice: String(r.choice) } : undefined;
    },
    async pending(conversation, now) {
      const rows = await all({
        sql: 'SELECT id FROM approvals WHERE conversation = ? AND decision IS NULL AND keep_until >= ? ORDER BY created_at, rowid',
        params: [conversation, now],
        mode: 'all',
      });
      return rows.map((r) => String(r.id));
    },
    async allPending(now) {
      const rows = await all({
        sql: 'SELECT id, conversation FROM approvals WHERE decision IS NULL AND keep_until >= ? ORDER BY created_at, rowid',
        params: [now],
        mode: 'all',
      });
      return rows.map((r) => ({ id: String(r.id), conversation: String(r.conversation) }));
    },
    async update(id, request, keepUntil) {
      const r = await one({
        sql: 'UPDATE approvals SET request = ?, keep_until = ? WHERE id = ? RETURNING id',
        params: [JSON.stringify(request), keepUntil, id],
        mode: 'get',
      });
      return r !== undefined;
    },
    async decideOnce(id, decision, now, keepUntil) {
      const r = await one({
        sql: 'UPDATE approvals SET decision = ?, keep_until = ? WHERE id = ? AND decision IS NULL AND keep_until >= ? RETURNING id',
        params: [JSON.stringify(decision), keepUntil, id, now],
        mode: 'get',
      });
      return r !== undefined;
    },
  };
}

/** Expired approvals with their tokens, and expired event ids, a bounded number per call. */
export function sweepStatements(now: number, limit: number): Statement[] {
  const doomed = 'SELECT id FROM approvals WHERE keep_until < ? ORDER BY keep_until, id LIMIT ?';
  return [
    { sql: `DELETE FROM approval_tokens WHERE request_id IN (${doomed})`, params: [now, limit], mode: 'run' },
    { sql: `DELETE FROM approvals WHERE id IN (${doomed})`, params: [now, limit], mode: 'run' },
    { sql: 'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE expires_at <= ? LIMIT ?)', params: [now, limit], mode: 'run' },
  ];
}
