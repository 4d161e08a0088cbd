/**
 * Runs on SQLite: one row per queued turn (oldest first by created_at, then insertion), at most one
 * record per conversation. The statement builders are shared with `checkpoint` (./index.ts), which
 * puts them in the same batch as the transcript write.
 */
import type { QueuedTurnRow, RunRecordRow, RunRepo } from '../types.js';
import { fenced } from './leases.js';
import type { Exec } from './transcripts.js';
import { claimEventStatement } from './misc.js';
import { WorkerError, type Row, type Statement } from './worker.js';

export const dropTurnStatement = (conversation: string, id: string): Statement => ({
  sql: 'DELETE FROM queued_turns WHERE conversation = ? AND id = ?',
  params: [conversation, id],
  mode: 'run',
});

export const saveRecordStatement = (conversation: string, record: unknown): Statement => ({
  sql: 'INSERT INTO run_records(conversation, record) VALUES (?, ?) ON CONFLICT(conversation) DO UPDATE SET record = excluded.record',
  params: [conversation, JSON.stringify(record)],
  mode: 'run',
});

export const dropRecordStatement = (conversation: string): Statement => ({
  sql: 'DELETE FROM run_records WHERE conversation = ?',
  params: [conversation],
  mode: 'run',
});

export function sqliteRuns(exec: Exec): RunRepo {
  return {
    async enqueueTurn(conversation, id, turn, now, claim) {
      const stmts: Statement[] = claim ? [{ ...claimEventStatement(claim.event, claim.ttlMs, now), require: true }] : [];
      try {
        await exec([
          ...stmts,
          {
            // The same id again (a retried accept) keeps its place.
            sql: 'INSERT INTO queued_turns(conversation, id, turn, created_at) VALUES (?, ?, ?, ?) ON CONFLICT(conversation, id) DO UPDATE SET turn = excluded.turn',
            params: [conversation, id, JSON.stringify(turn), now],
            mode: 'run',
          },
        ]);
        return true;
      } catch (err) {
        // The event was claimed already (a redelivery): nothing was written.
        if (claim && err instanceof WorkerError && err.code === 'GATEHOUSE_PRECONDITION' && err.index === 0) return false;
        throw err;
      }
    },
    async dropTurn(conversation, id) {
      await exec([dropTurnStatement(conversation, id)]);
    },
    async queuedTurns() {
      const [rows] = (await exec([{ sql: 'SELECT conversation, id, turn FROM queued_turns ORDER BY created_at, rowid', params: [], mode: 'all' }])) as [Row[]];
      return rows.map((r): QueuedTurnRow => ({ conversation: String(r.conversation), id: String(r.id), turn: JSON.parse(String(r.turn)) }));
    },
    async saveRecord(conversation, record, fence) {
      await fenced(exec, fence, [saveRecordStatement(conversation, record)]);
    },
    async dropRecord(conversation, fence) {
      await fenced(exec, fence, [dropRecordStatement(conversation)]);
    },
    async pending(conversation, turnId) {
      const [rec, turn] = (await exec([
        { sql: 'SELECT record FROM run_records WHERE conversation = ?', params: [conversation], mode: 'get' },
        { sql: 'SELECT turn FROM queued_turns WHERE conversation = ? AND id = ?', params: [conversation, turnId ?? null], mode: 'get' },
      ])) as [Row | undefined, Row | undefined];
      return { ...(rec ? { record: JSON.parse(String(rec.record)) } : {}), ...(turn ? { turn: JSON.parse(String(turn.turn)) } : {}) };
    },
    async records() {
      const [rows] = (await exec([{ sql: 'SELECT conversation, record FROM run_records ORDER BY rowid', params: [], mode: 'all' }])) as [Row[]];
      return rows.map((r): RunRecordRow => ({ conversation: String(r.conversation), record: JSON.parse(String(r.record)) }));
    },
  };
}
