/**
 * Spend totals on SQLite (issue 24).
 *
 * Contract (beyond agent/store/types.ts): `reserve` is ONE batch in one write transaction, a
 * conditional upsert per line with `require`: a line that would pass its limit returns no row, and
 * the worker rolls the whole batch back (GATEHOUSE_PRECONDITION, its index names the line). SQLite
 * serialises write transactions across processes, so no two reservations interleave. A line's
 * ceiling is min(limit + raised, cap); `purge` deletes in bounded batches (the sweep loops).
 */
import type { SpendRepo, SpendTotal } from '../types.js';
import type { Exec } from './transcripts.js';
import { WorkerError, type Row, type Statement } from './worker.js';

const PURGE_BATCH = 500;

/** Deletes up to `limit` totals whose period ended by `now` (also run by the store's sweep). */
export const spendPurgeStatement = (now: number, limit: number): Statement => ({
  sql: 'DELETE FROM spend WHERE key IN (SELECT key FROM spend WHERE resets_at IS NOT NULL AND resets_at <= ? LIMIT ?)',
  params: [now, limit],
  mode: 'run',
});

const byKey = <T extends { key: string }>(lines: T[]): T[] => [...lines].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

export function sqliteSpend(exec: Exec): SpendRepo {
  const totals = async (keys: string[]): Promise<Map<string, SpendTotal>> => {
    const out = new Map<string, SpendTotal>();
    if (keys.length === 0) return out;
    const [rs] = (await exec([
      { sql: `SELECT key, used, reserved FROM spend WHERE key IN (${keys.map(() => '?').join(', ')})`, params: keys, mode: 'all' },
    ])) as [Row[]];
    for (const r of rs) out.set(String(r.key), { used: Number(r.used), reserved: Number(r.reserved) });
    return out;
  };
  return {
    async reserve(lines, now) {
      const sorted = byKey(lines);
      const stmts: Statement[] = sorted.map((l) => ({
        // The SELECT's WHERE covers a new row (or one only raised: no row, no upsert); the upsert's WHERE an existing one.
        sql: `INSERT INTO spend(key, used, reserved, updated_at, resets_at) SELECT ?, 0, ?, ?, ?
              WHERE ? <= min(? + coalesce((SELECT raised FROM spend WHERE key = ?), 0), ?)
              ON CONFLICT(key) DO UPDATE SET reserved = spend.reserved + excluded.reserved, updated_at = excluded.updated_at
              WHERE spend.used + spend.reserved + excluded.reserved <= min(? + spend.raised, ?) RETURNING key`,
        params: [l.key, l.amount, now, l.resetsAt ?? null, l.amount, l.limit, l.key, l.cap ?? l.limit, l.limit, l.cap ?? l.limit],
        mode: 'get',
        require: true,
      }));
      if (stmts.length === 0) return { ok: true };
      try {
        await exec(stmts);
        return { ok: true };
      } catch (err) {
        if (!(err instanceof WorkerError) || err.code !== 'GATEHOUSE_PRECONDITION' || err.index === undefined) throw err;
        const key = sorted[err.index]!.key;
        const [row] = (await exec([{ sql: 'SELECT used, reserved, raised FROM spend WHERE key = ?', params: [key], mode: 'get' }])) as [Row | undefined];
        const total = { used: Number(row?.used ?? 0), reserved: Number(row?.reserved ?? 0) };
        return { ok: false, key, total, raised: Number(row?.raised ?? 0) };
      }
    },
    async raise(line, from, to, now) {
      const [row] = (await exec([
        {
          sql: `INSERT INTO spend(key, used, reserved, updated_at, resets_at, raised) SELECT ?, 0, 0, ?, ?, ? WHERE 1
                ON CONFLICT(key) DO UPDATE SET raised = excluded.raised, updated_at = excluded.updated_at WHERE spend.raised = ? RETURNING key`,
          params: [line.key, now, line.resetsAt ?? null, to, from],
          mode: 'get',
        },
      ])) as [Row | undefined];
      return row !== undefined;
    },
    async purge(now) {
      let n = 0;
      for (;;) {
        const [r] = (await exec([spendPurgeStatement(now, PURGE_BATCH)])) as [{ changes: number }];
        n += r.changes;
        if (r.changes < PURGE_BATCH) return n;
      }
    },
    async settle(lines, now) {
      if (lines.length === 0) return;
      await exec(
        byKey(lines).map((l) => ({
          sql: 'UPDATE spend SET reserved = max(0, reserved - ?), used = used + ?, updated_at = ? WHERE key = ?',
          params: [l.amount, l.used, now, l.key],
          mode: 'run' as const,
        })),
      );
    },
    totals,
  };
}
