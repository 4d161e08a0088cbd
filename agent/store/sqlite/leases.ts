/**
 * Leases on SQLite (fencing, agent/store/types.ts LeaseRepo): one row per conversation ever claimed.
 * One process writes a store (the exclusive lock), so a fence here mostly guards against a run of
 * this process that outlived its claim; it is still checked in the write's own transaction, as the
 * first statement of the batch (`require`d: a moved epoch rolls the whole batch back).
 */
import { FencedError, type Fence, type LeaseRepo } from '../types.js';
import type { Exec } from './transcripts.js';
import { WorkerError, type Row, type Statement } from './worker.js';

/** The batch's first statement when a write carries a fence. */
export const fenceStatement = (f: Fence): Statement => ({
  sql: 'SELECT epoch FROM leases WHERE conversation = ? AND owner = ? AND epoch = ?',
  params: [f.conversation, f.owner, f.epoch],
  mode: 'get',
  require: true,
});

const currentStatement = (conversation: string): Statement => ({
  sql: 'SELECT owner, epoch FROM leases WHERE conversation = ?',
  params: [conversation],
  mode: 'get',
});

/** Runs `stmts` behind the fence (when given): a fence that no longer holds is a FencedError. */
export async function fenced(exec: Exec, fence: Fence | undefined, stmts: Statement[]): Promise<unknown[]> {
  if (!fence) return exec(stmts);
  try {
    return (await exec([fenceStatement(fence), ...stmts])).slice(1);
  } catch (err) {
    if (err instanceof WorkerError && err.code === 'GATEHOUSE_PRECONDITION' && err.index === 0) {
      const [row] = (await exec([currentStatement(fence.conversation)])) as [Row | undefined];
      throw new FencedError(fence, row ? Number(row.epoch) : undefined);
    }
    if (err instanceof WorkerError && err.index !== undefined) throw new WorkerError(err.message, err.code, err.index - 1);
    throw err;
  }
}

export function sqliteLeases(exec: Exec): LeaseRepo {
  return {
    async take(conversation, owner, now) {
      const [row] = (await exec([
        {
          sql: 'INSERT INTO leases(conversation, owner, epoch, taken_at) VALUES (?, ?, 1, ?) ON CONFLICT(conversation) DO UPDATE SET owner = excluded.owner, epoch = leases.epoch + 1, taken_at = excluded.taken_at RETURNING epoch',
          params: [conversation, owner, now],
          mode: 'get',
        },
      ])) as [Row];
      return { conversation, owner, epoch: Number(row.epoch) };
    },
    async holds(f) {
      const [row] = (await exec([{ ...fenceStatement(f), require: false }])) as [Row | undefined];
      return row !== undefined;
    },
    async current(conversation) {
      const [row] = (await exec([currentStatement(conversation)])) as [Row | undefined];
      return row ? { conversation, owner: String(row.owner), epoch: Number(row.epoch) } : undefined;
    },
  };
}
