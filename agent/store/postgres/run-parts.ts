/**
 * Contract: what a checkpoint writes beside the transcript (the queued turn dropped, the run record
 * saved or dropped), and the fence a replica's write is made under, as parts of ONE statement.
 * - `fenceCte`: `f` reads the conversation's lease row FOR SHARE and is empty unless it names the
 *   fence's owner and epoch. Everything the statement writes is guarded by it, so a fenced write is
 *   one round trip with no transaction left open: a concurrent `take` (./leases.ts) waits for the
 *   statement, and a take that came first empties `f`, so nothing is written.
 * - `partsCtes`: the run parts as data-modifying CTEs, each written only when `guard` returned a row.
 * - `writePartsFenced`: the parts alone under a fence (a run record saved or dropped, a turn dropped);
 *   a moved fence is a FencedError and nothing was written. Rerunning it is harmless (idempotent).
 * - `fencedMiss`: after a guarded statement wrote nothing, the FencedError to throw when the fence
 *   moved (one read, only on that path); undefined when the fence still holds.
 */
import { FencedError, type Fence } from '../types.js';
import { enc, num, type Client, type Db } from './db.js';

/** What a checkpoint writes beside the transcript, in the same statement. */
export interface RunParts {
  dropTurn?: { conversation: string; id: string };
  record?: { conversation: string; record: unknown | null };
}

const param = (params: unknown[], v: unknown): string => `$${params.push(v)}`;

/** The CTE `f` (the fence's lease row, locked FOR SHARE; empty once the fence moved). */
export function fenceCte(params: unknown[], fence: Fence): string {
  return `f AS (SELECT 1 FROM leases WHERE conversation = ${param(params, fence.conversation)} AND owner = ${param(params, fence.owner)} AND epoch = ${param(params, fence.epoch)} FOR SHARE)`;
}

/** The run parts as CTEs `d` (turn dropped) and `r` (record saved or dropped), written only when `guard` has a row. */
export function partsCtes(params: unknown[], parts: RunParts, guard: string): string[] {
  const when = `EXISTS (SELECT 1 FROM ${guard})`;
  const ctes: string[] = [];
  if (parts.dropTurn) {
    ctes.push(
      `d AS (DELETE FROM queued_turns WHERE conversation = ${param(params, parts.dropTurn.conversation)} AND id = ${param(params, parts.dropTurn.id)} AND ${when})`,
    );
  }
  if (parts.record) {
    const conversation = param(params, parts.record.conversation);
    if (parts.record.record === null) ctes.push(`r AS (DELETE FROM run_records WHERE conversation = ${conversation} AND ${when})`);
    else {
      const record = param(params, enc(parts.record.record));
      ctes.push(
        `r AS (INSERT INTO run_records (conversation, record) SELECT ${conversation}, ${record} WHERE ${when} ON CONFLICT (conversation) DO UPDATE SET record = EXCLUDED.record)`,
      );
    }
  }
  return ctes;
}

/** The parts alone, without a fence, inside an open transaction or on their own. */
export async function writeParts(db: Db, c: Client, parts: RunParts): Promise<void> {
  const params: unknown[] = [];
  const ctes = partsCtes(params, parts, '(SELECT 1) AS always');
  if (ctes.length > 0) await db.q(c, `WITH ${ctes.join(',\n')} SELECT 1`, params);
}

/** The parts under a fence, in one statement. */
export async function writePartsFenced(db: Db, what: string, parts: RunParts, fence: Fence): Promise<void> {
  const params: unknown[] = [];
  const ctes = [fenceCte(params, fence), ...partsCtes(params, parts, 'f')];
  await db.run(what, 'idempotent', async (c) => {
    const r = await db.q(c, `WITH ${ctes.join(',\n')} SELECT EXISTS (SELECT 1 FROM f) AS held`, params);
    if ((r.rows[0] as { held: boolean } | undefined)?.held) return;
    throw (await fencedMiss(db, c, fence)) ?? new FencedError(fence, fence.epoch);
  });
}

/** A guarded statement wrote nothing: the FencedError when the fence moved, else undefined. */
export async function fencedMiss(db: Db, c: Client, fence: Fence): Promise<FencedError | undefined> {
  const r = await db.q(c, 'SELECT owner, epoch FROM leases WHERE conversation = $1', [fence.conversation]);
  const row = r.rows[0] as { owner: string; epoch: string } | undefined;
  if (row && row.owner === fence.owner && num(row.epoch) === fence.epoch) return undefined;
  return new FencedError(fence, row ? num(row.epoch) : undefined);
}
