/**
 * Spend totals on PostgreSQL (issue 24).
 *
 * Contract (beyond agent/store/types.ts): `reserve` is one transaction of conditional upserts, in
 * key order (two reservations never wait on each other in a cycle). Under READ COMMITTED an
 * ON CONFLICT DO UPDATE locks the row and evaluates its WHERE on the newest committed total, so
 * parallel reservations from any number of processes queue on the row and none passes the limit.
 * A line over its limit rolls the transaction back. Neither call is retried after its COMMIT was
 * sent (a reservation twice would hold money twice): a lost connection there rejects.
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
              `INSERT INTO spend AS s (key, used, reserved, updated_at) SELECT $1::text, 0, $2::bigint, $3::bigint WHERE $2::bigint <= $4::bigint
               ON CONFLICT (key) DO UPDATE SET reserved = s.reserved + EXCLUDED.reserved, updated_at = EXCLUDED.updated_at
               WHERE s.used + s.reserved + EXCLUDED.reserved <= $4::bigint RETURNING 1`,
              [l.key, l.amount, now, l.limit],
            );
            if (r.rows.length === 0) throw new Over(l.key);
          }
        });
        return { ok: true };
      } catch (err) {
        if (!(err instanceof Over)) throw err;
        return { ok: false, key: err.key, total: (await totals([err.key])).get(err.key) ?? { used: 0, reserved: 0 } };
      }
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
