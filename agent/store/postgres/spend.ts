/**
 * Spend totals on PostgreSQL (issue 24).
 *
 * Contract (beyond agent/store/types.ts): `reserve` is one transaction of conditional upserts, in
 * key order (two reservations never wait on each other in a cycle). Under READ COMMITTED an
 * ON CONFLICT DO UPDATE locks the row and evaluates its WHERE on the newest committed total, so
 * parallel reservations from any number of processes queue on the row and none passes the limit.
 * A line over its limit rolls the transaction back. Neither call is retried after its COMMIT was
 * sent (a reservation twice would hold money twice): a lost connection there rejects. A line's
 * ceiling is least(limit + raised, cap); `raise` is a compare-and-set on `raised`.
 */
import { StoreConflictError, type SpendRepo, type SpendTotal } from '../types.js';
import type { Db } from './db.js';

/** Thrown inside the transaction to roll it back; a StoreConflictError so Db.tx passes it unwrapped. */
class Over extends StoreConflictError {
  constructor(readonly key: string) {
    super(key, 0, undefined);
  }
}

const byKey = <T extends { key: string }>(lines: T[]): T[] => [...lines].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

export function spendRepo(db: Db): SpendRepo {
  const totals = async (keys: string[]): Promise<Map<string, SpendTotal>> => {
    const out = new Map<string, SpendTotal>();
    if (keys.length === 0) return out;
    const r = await db.query('read spend totals', 'read', 'SELECT key, used, reserved FROM spend WHERE key = ANY($1::text[])', [keys]);
    for (const row of r.rows as Array<{ key: string; used: string; reserved: string }>)
      out.set(row.key, { used: Number(row.used), reserved: Number(row.reserved) });
    return out;
  };
  return {
    async reserve(lines, now) {
      if (lines.length === 0) return { ok: true };
      try {
        await db.tx('reserve spend', async (c) => {
          for (const l of byKey(lines)) {
            const r = await db.q(
              c,
              `INSERT INTO spend AS s (key, used, reserved, updated_at, resets_at)
               SELECT $1::text, 0, $2::bigint, $3::bigint, $6::bigint
               WHERE $2::bigint <= least($4::bigint + coalesce((SELECT raised FROM spend WHERE key = $1::text), 0), $5::bigint)
               ON CONFLICT (key) DO UPDATE SET reserved = s.reserved + EXCLUDED.reserved, updated_at = EXCLUDED.updated_at
               WHERE s.used + s.reserved + EXCLUDED.reserved <= least($4::bigint + s.raised, $5::bigint) RETURNING 1`,
              [l.key, l.amount, now, l.limit, l.cap ?? l.limit, l.resetsAt ?? null],
            );
            if (r.rows.length === 0) throw new Over(l.key);
          }
        });
        return { ok: true };
      } catch (err) {
        if (!(err instanceof Over)) throw err;
        const r = await db.query('read a spend total', 'read', 'SELECT used, reserved, raised FROM spend WHERE key = $1', [err.key]);
        const row = r.rows[0] as { used: string; reserved: string; raised: string } | undefined;
        return { ok: false, key: err.key, total: { used: Number(row?.used ?? 0), reserved: Number(row?.reserved ?? 0) }, raised: Number(row?.raised ?? 0) };
      }
    },
    async raise(line, from, to, now) {
      // Setting it to `to` twice is one raise, so a retry after a lost connection is safe (it then
      // answers false; the gate reserves again either way).
      const r = await db.query(
        'raise a spend limit',
        'idempotent',
        `INSERT INTO spend AS s (key, used, reserved, updated_at, resets_at, raised) VALUES ($1, 0, 0, $2, $3, $4)
         ON CONFLICT (key) DO UPDATE SET raised = EXCLUDED.raised, updated_at = EXCLUDED.updated_at WHERE s.raised = $5 RETURNING 1`,
        [line.key, now, line.resetsAt ?? null, to, from],
      );
      return r.rows.length > 0;
    },
    async purge(now) {
      const r = await db.query('purge spend totals', 'idempotent', 'DELETE FROM spend WHERE resets_at IS NOT NULL AND resets_at <= $1', [now]);
      return r.rowCount ?? 0;
    },
    async settle(lines, now) {
      if (lines.length === 0) return;
      await db.tx('settle spend', async (c) => {
        for (const l of byKey(lines)) {
          await db.q(c, 'UPDATE spend SET reserved = greatest(0, reserved - $1::bigint), used = used + $2::bigint, updated_at = $3 WHERE key = $4', [
            l.amount,
            l.used,
            now,
            l.key,
          ]);
        }
      });
    },
    totals,
  };
}
