/**
 * Contract: LeaseRepo on PostgreSQL (fencing, ../types.ts). One row per conversation ever claimed.
 * - take: ONE upsert that bumps the epoch (1 on the first take) and clears the holder (the owner
 *   fast path, ./owner-lanes.ts: the replica whose lane held it lets it go). It waits for the writes in flight
 *   under the previous fence: those hold the row FOR SHARE until they commit, so once `take`
 *   resolves no earlier fence can still write, and what the new owner reads is what they wrote.
 * - A fenced write is one statement guarded by the lease row read FOR SHARE (./run-parts.ts
 *   `fenceCte`: appends, checkpoints, run records), or, for a write of several statements, runs
 *   `checkFence` as the first statement of its transaction: the row is read FOR SHARE (a concurrent
 *   take waits for this transaction), a moved epoch is a FencedError and the transaction is rolled back. The transaction may idle at most IDLE_IN_FENCED_TX_MS (a writer
 *   paused mid-write loses its session rather than holding up the next take).
 */
import { FencedError, type Fence, type LeaseRepo } from '../types.js';
import { num, type Client, type Db } from './db.js';

/** How long a fenced write may sit idle inside its transaction before the server ends it. */
const IDLE_IN_FENCED_TX_MS = 5000;

export async function checkFence(db: Db, c: Client, fence: Fence): Promise<void> {
  // A writer paused mid-transaction (SIGSTOP) must not block the next claim for as long as it
  // sleeps: the server ends its session after 5 s idle in the transaction, releasing the row; on
  // waking, the write is retried from BEGIN and refused here.
  const r = await db.q(
    c,
    `SELECT set_config('idle_in_transaction_session_timeout', '${IDLE_IN_FENCED_TX_MS}', true) AS t, owner, epoch FROM leases WHERE conversation = $1 FOR SHARE`,
    [fence.conversation],
  );
  const row = r.rows[0] as { owner: string; epoch: string } | undefined;
  if (!row || row.owner !== fence.owner || num(row.epoch) !== fence.epoch) throw new FencedError(fence, row ? num(row.epoch) : undefined);
}

export function leaseRepo(db: Db): LeaseRepo {
  return {
    async take(conversation, owner, now) {
      // Retried after a lost connection it may bump twice: only the epoch returned holds, as wanted.
      const r = await db.query(
        `claim ${conversation}`,
        'idempotent',
        `INSERT INTO leases AS l (conversation, owner, epoch, taken_at) VALUES ($1, $2, 1, $3)
         ON CONFLICT (conversation) DO UPDATE SET owner = EXCLUDED.owner, epoch = l.epoch + 1, taken_at = EXCLUDED.taken_at, holder = NULL
         RETURNING epoch`,
        [conversation, owner, now],
      );
      return { conversation, owner, epoch: num((r.rows[0] as { epoch: string }).epoch) };
    },
    async holds(f) {
      const r = await db.query(`check the claim on ${f.conversation}`, 'read', 'SELECT 1 FROM leases WHERE conversation = $1 AND owner = $2 AND epoch = $3', [
        f.conversation,
        f.owner,
        f.epoch,
      ]);
      return r.rows.length > 0;
    },
    async current(conversation) {
      const r = await db.query(`read the claim on ${conversation}`, 'read', 'SELECT owner, epoch FROM leases WHERE conversation = $1', [conversation]);
      const row = r.rows[0] as { owner: string; epoch: string } | undefined;
      return row ? { conversation, owner: row.owner, epoch: num(row.epoch) } : undefined;
    },
  };
}
