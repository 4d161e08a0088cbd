/**
 * Spend totals on SQLite (issue 24).
 *
 * Contract (beyond agent/store/types.ts): `reserve` is ONE batch in one write transaction, a
 * conditional upsert per line with `require`: a line that would pass its limit returns no row, and
 * the worker rolls the whole batch back (GATEHOUSE_PRECONDITION, its index names the line). SQLite
 * serialises write transactions across processes, so no two reservations interleave.
 */
import type { SpendRepo, SpendTotal } from '../types.js';
import type { Exec } from './transcripts.js';
import { WorkerError, type Row, type Statement } from './worker.js';

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
        // The SELECT's WHERE covers a new row; the upsert's WHERE an existing one.
        sql: `INSERT INTO spend(key, used, reserved, updated_at) SELECT ?, 0, ?, ? WHERE ? <= ?
              ON CONFLICT(key) DO UPDATE SET reserved = spend.reserved + excluded.reserved, updated_at = excluded.updated_at
              WHERE spend.used + spend.reserved + excluded.reserved <= ? RETURNING key`,
        params: [l.key, l.amount, now, l.amount, l.limit, l.limit],
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
        return { ok: false, key, total: (await totals([key])).get(key) ?? { used: 0, reserved: 0 } };
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
